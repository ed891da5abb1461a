#pragma once
// Dropping every log line: for the fuzz targets (test/fuzz), whose subjects log each input they reject. Apart
// from log.h so that the one caller's need does not rebuild everything that logs.
namespace kcm::log {

void setDiscard(bool discard);

}  // namespace kcm::log
