//! A task's schedule (ADR 0081) and the clock's one decision: which tick, if any, is due. Pure
//! functions of the schedule, the task's last tick and the time, so that a simulation can drive
//! them through failovers.

/// Microseconds in a minute.
const MINUTE: i64 = 60_000_000;

/// When a task's ticks fall.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Schedule {
    /// Every `period` microseconds, at the multiples of it since the epoch.
    Every { period: i64 },
    /// At the minutes (UTC) a cron line's five fields match.
    Cron(Box<Cron>),
}

/// The values each of a cron line's fields allows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cron {
    minutes: u64,
    hours: u64,
    days: u64,
    months: u64,
    weekdays: u64,
    /// Whether the day of the month and the day of the week were both restricted: then a day
    /// matching either runs, as in cron.
    either_day: bool,
}

impl Schedule {
    /// `EVERY n SECOND[S] | MINUTE[S] | HOUR[S] | DAY[S]` or `CRON m h dom mon dow`.
    pub fn parse(text: &str) -> Result<Schedule, String> {
        let words: Vec<&str> = text.split_whitespace().collect();
        match words.as_slice() {
            [every, n, unit] if every.eq_ignore_ascii_case("every") => {
                let n: i64 = n
                    .parse()
                    .ok()
                    .filter(|n| *n > 0)
                    .ok_or_else(|| format!("EVERY takes a positive whole number, not {n}"))?;
                let unit = unit.to_ascii_lowercase();
                let micros = match unit.trim_end_matches('s') {
                    "second" => 1_000_000,
                    "minute" => MINUTE,
                    "hour" => 60 * MINUTE,
                    "day" => 24 * 60 * MINUTE,
                    _ => {
                        return Err(format!(
                            "EVERY counts SECONDS, MINUTES, HOURS or DAYS, not {unit}"
                        ));
                    }
                };
                let period = n
                    .checked_mul(micros)
                    .filter(|p| *p <= 366 * 24 * 60 * MINUTE)
                    .ok_or("a schedule's period is at most a year")?;
                Ok(Schedule::Every { period })
            }
            [cron, fields @ ..] if cron.eq_ignore_ascii_case("cron") => {
                let [minute, hour, day, month, weekday] = fields else {
                    return Err(
                        "CRON takes five fields: minute hour day-of-month month day-of-week".into(),
                    );
                };
                Ok(Schedule::Cron(Box::new(Cron {
                    minutes: field(minute, 0, 59)?,
                    hours: field(hour, 0, 23)?,
                    days: field(day, 1, 31)?,
                    months: field(month, 1, 12)?,
                    // 7 is Sunday as 0 is.
                    weekdays: {
                        let days = field(weekday, 0, 7)?;
                        (days | (days >> 7)) & 0x7f
                    },
                    either_day: *day != "*" && *weekday != "*",
                })))
            }
            _ => Err(format!(
                "a schedule is 'EVERY n SECONDS|MINUTES|HOURS|DAYS' or 'CRON m h dom mon dow', not '{text}'"
            )),
        }
    }

    /// The latest tick due at `now`: the latest scheduled time after `last_tick` and not after
    /// `now`. Ticks missed while no leader ran collapse into this one.
    pub fn due(&self, last_tick: i64, now: i64) -> Option<i64> {
        let latest = match self {
            Schedule::Every { period } => now.div_euclid(*period) * period,
            Schedule::Cron(cron) => cron.latest_at_or_before(now, last_tick)?,
        };
        (latest > last_tick).then_some(latest)
    }
}

impl Cron {
    /// The latest matching minute at or before `now` and after `floor`.
    fn latest_at_or_before(&self, now: i64, floor: i64) -> Option<i64> {
        let mut minute = now.div_euclid(MINUTE);
        let floor = floor.div_euclid(MINUTE);
        while minute > floor {
            let (day_number, minute_of_day) = (minute.div_euclid(1440), minute.rem_euclid(1440));
            if !self.day_matches(day_number) {
                // Back to the last minute of the day before.
                minute -= minute_of_day + 1;
                continue;
            }
            let (hour, of_hour) = (minute_of_day / 60, minute_of_day % 60);
            if self.hours & (1 << hour) == 0 {
                minute -= of_hour + 1;
                continue;
            }
            if self.minutes & (1 << of_hour) != 0 {
                return Some(minute * MINUTE);
            }
            minute -= 1;
        }
        None
    }

    fn day_matches(&self, day_number: i64) -> bool {
        let (_, month, day) = civil_from_days(day_number);
        if self.months & (1 << month) == 0 {
            return false;
        }
        // 1970-01-01 was a Thursday (4).
        let weekday = (day_number + 4).rem_euclid(7);
        let by_date = self.days & (1 << day) != 0;
        let by_weekday = self.weekdays & (1 << weekday) != 0;
        match self.either_day {
            true => by_date || by_weekday,
            false => by_date && by_weekday,
        }
    }
}

/// The values a cron field allows, as bits: `*`, `n`, `a-b`, each with an optional `/step`,
/// separated by commas.
fn field(text: &str, low: u32, high: u32) -> Result<u64, String> {
    let mut bits = 0u64;
    for part in text.split(',') {
        let (range, step) = match part.split_once('/') {
            Some((range, step)) => {
                let step: u32 = step
                    .parse()
                    .ok()
                    .filter(|s| *s > 0)
                    .ok_or_else(|| format!("a cron step is a positive number, not {step}"))?;
                (range, step)
            }
            None => (part, 1),
        };
        let number = |t: &str| -> Result<u32, String> {
            t.parse::<u32>()
                .ok()
                .filter(|n| (low..=high).contains(n))
                .ok_or_else(|| format!("cron field value {t} is not within {low}-{high}"))
        };
        let (from, to) = match range {
            "*" => (low, high),
            _ => match range.split_once('-') {
                Some((a, b)) => (number(a)?, number(b)?),
                None if step > 1 => (number(range)?, high),
                None => (number(range)?, number(range)?),
            },
        };
        if from > to {
            return Err(format!("cron range {range} runs backwards"));
        }
        for value in (from..=to).step_by(step as usize) {
            bits |= 1 << value;
        }
    }
    Ok(bits)
}

/// The (year, month, day) of a day counted from 1970-01-01 (Howard Hinnant's algorithm).
pub(crate) fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: i64 = 1_000_000;

    /// 2026-12-06 (a Sunday) 10:07:30 UTC.
    const SUNDAY: i64 = 1_796_551_650 * SECOND;

    #[test]
    fn every_falls_on_multiples_and_missed_ticks_collapse_into_one() {
        let every = Schedule::parse("EVERY 10 SECONDS").unwrap();
        assert_eq!(
            every,
            Schedule::Every {
                period: 10 * SECOND
            }
        );
        assert_eq!(every.due(95 * SECOND, 99 * SECOND), None);
        assert_eq!(every.due(95 * SECOND, 100 * SECOND), Some(100 * SECOND));
        assert_eq!(every.due(100 * SECOND, 109 * SECOND), None);
        // Down for a minute: one tick, the latest.
        assert_eq!(every.due(100 * SECOND, 165 * SECOND), Some(160 * SECOND));
        assert!(Schedule::parse("every 2 minute").is_ok());
        assert!(Schedule::parse("EVERY 0 SECONDS").is_err());
        assert!(Schedule::parse("EVERY 3 WEEKS").is_err());
        assert!(Schedule::parse("EVERY 400 DAYS").is_err());
        assert!(Schedule::parse("SOMETIMES").is_err());
    }

    #[test]
    fn cron_matches_minutes_hours_and_days() {
        let (year, month, day) = civil_from_days(SUNDAY.div_euclid(86_400 * SECOND));
        assert_eq!((year, month, day), (2026, 12, 6));
        let every_five = Schedule::parse("CRON */5 * * * *").unwrap();
        assert_eq!(every_five.due(0, SUNDAY), Some(SUNDAY - 150 * SECOND));
        assert_eq!(every_five.due(SUNDAY - 150 * SECOND, SUNDAY), None);
        // 09:30 on Sundays.
        let sundays = Schedule::parse("CRON 30 9 * * 0").unwrap();
        assert_eq!(
            sundays.due(0, SUNDAY),
            Some(SUNDAY - 37 * 60 * SECOND - 30 * SECOND)
        );
        assert_eq!(Schedule::parse("CRON 30 9 * * 7").unwrap(), sundays);
        // Mondays only: the last was six days back.
        let mondays = Schedule::parse("CRON 0 12 * * 1").unwrap();
        let due = mondays.due(0, SUNDAY).unwrap();
        assert_eq!((SUNDAY - due) / SECOND, 6 * 86_400 - 2 * 3600 + 7 * 60 + 30);
        // The day of the month or the day of the week, when both are given.
        let either = Schedule::parse("CRON 0 0 1 * 0").unwrap();
        assert_eq!(
            either.due(0, SUNDAY),
            Some(SUNDAY - (10 * 3600 + 7 * 60 + 30) * SECOND)
        );
        assert!(Schedule::parse("CRON 60 * * * *").is_err());
        assert!(Schedule::parse("CRON * * * *").is_err());
        assert!(Schedule::parse("CRON 5-1 * * * *").is_err());
    }
}
