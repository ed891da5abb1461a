#pragma once
// Time zones as Go's time.LoadLocation sees them (what upstream's cronjob-controller uses for spec.timeZone and
// CRON_TZ=): the system tz database (/usr/share/zoneinfo, or $ZONEINFO), TZif v2+ files read for their
// transitions and, past the last one, their POSIX TZ footer rule ("CET-1CEST,M3.5.0,M10.5.0/3"). "" and "UTC" are
// UTC; "Local" is $TZ or /etc/localtime. Plus the civil-time arithmetic of Go's time.Date / Time.In that the cron
// schedule walks with. Immutable once loaded; thread-safe.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"

namespace kcm::controllers::cronjob {

// A wall-clock reading in some zone.
struct Civil {
  int64_t year = 1970;
  int month = 1, day = 1, hour = 0, minute = 0, second = 0;
  int weekday = 4;  // 0 = Sunday
};

class TimeZone {
 public:
  // UTC.
  TimeZone() = default;
  // Go's errors: "unknown time zone NAME", "time: invalid location name".
  static Result<std::shared_ptr<const TimeZone>> load(const std::string& name);
  static std::shared_ptr<const TimeZone> utc();
  // Parses a TZif image (for tests and load()).
  static Result<std::shared_ptr<const TimeZone>> fromTZif(const std::string& name, const std::string& data);

  const std::string& name() const { return name_; }
  // The UTC offset (seconds east) in effect at unix time t, and the [start, end) unix range where it holds.
  struct Lookup {
    int32_t offset = 0;
    int64_t start = INT64_MIN, end = INT64_MAX;
  };
  Lookup lookup(int64_t unix) const;
  struct Rule;  // a POSIX TZ rule (the footer)

  // time.Date(year, month, day, hour, min, sec, 0, loc).Unix(): out-of-range fields are normalised (month 13 is
  // January of the next year, day 0 the last of the previous month); a wall time in a gap or overlap resolves as
  // Go resolves it.
  int64_t date(int64_t year, int64_t month, int64_t day, int64_t hour, int64_t minute, int64_t second) const;
  // The wall clock at unix time t (t.In(loc)).
  Civil civil(int64_t unix) const;

 private:
  std::string name_ = "UTC";
  std::vector<int64_t> transitions_;    // unix times, ascending
  std::vector<uint8_t> transitionType_;  // index into offsets_
  std::vector<int32_t> offsets_;        // utc offsets of the local time types
  int32_t firstOffset_ = 0;             // before the first transition
  std::shared_ptr<const Rule> rule_;    // after the last transition (may be null: the last type holds)
};

// Proleptic Gregorian days since 1970-01-01, and back.
int64_t daysFromCivil(int64_t y, int64_t m, int64_t d);
Civil civilFromUnix(int64_t unix);  // UTC

}  // namespace kcm::controllers::cronjob
