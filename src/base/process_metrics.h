#pragma once
// process_* metrics as Prometheus' Go client exports them (CPU seconds, resident and virtual memory and its limit,
// open fds, start time, network bytes), refreshed from /proc when /metrics is rendered.
namespace kcm::metrics {
void updateProcessMetrics();
}
