#pragma once
// process_* metrics as Prometheus' Go client exports them (CPU seconds, resident and virtual memory, open fds,
// start time), refreshed from /proc when /metrics is rendered.
namespace kcm::metrics {
void updateProcessMetrics();
}
