#pragma once
// Cron schedules as upstream parses them (github.com/robfig/cron/v3 ParseStandard, through
// parsers.ParseCronScheduleWithPanicRecovery): five fields (minute hour day-of-month month day-of-week) with
// lists, ranges, steps, "*"/"?", month and weekday names; the descriptors @yearly/@annually, @monthly, @weekly,
// @daily/@midnight, @hourly and @every <duration>; an optional TZ=/CRON_TZ= prefix. next() walks the calendar in
// the schedule's zone as robfig's SpecSchedule.Next does (DST gaps and overlaps included). Error texts are
// robfig's. Immutable; thread-safe.
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "base/status.h"
#include "controllers/cronjob/timezone.h"

namespace kcm::controllers::cronjob {

using WallTime = std::chrono::system_clock::time_point;

class CronSchedule {
 public:
  // `local`: the zone of a schedule without TZ= (Go's time.Local; robfig then walks in the time's own zone,
  // which for the controller's time.Now() is Local).
  static Result<CronSchedule> parseStandard(const std::string& spec,
                                            std::shared_ptr<const TimeZone> local = TimeZone::utc());
  // The first activation strictly after t (whole seconds); the zero time_point when none within five years.
  WallTime next(WallTime t) const;

 private:
  uint64_t second_ = 0, minute_ = 0, hour_ = 0, dom_ = 0, month_ = 0, dow_ = 0;
  std::chrono::seconds every_{0};  // @every: a constant delay instead of the fields
  std::shared_ptr<const TimeZone> zone_;
};

}  // namespace kcm::controllers::cronjob
