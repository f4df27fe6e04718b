//! UTC calendar time of a Unix time (the proleptic Gregorian calendar, from days since
//! 1970-01-01), for the dates lbscope prints and the names it gives files; no time zones.

/// A UTC date and time of day.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Civil {
    pub year: i64,
    pub month: u32,
    pub day: u32,
    pub hour: u32,
    pub minute: u32,
    pub second: u32,
}

/// The UTC date and time of `unix_s` seconds since the epoch.
pub fn civil(unix_s: u64) -> Civil {
    let days = (unix_s / 86_400) as i64;
    let rem = (unix_s % 86_400) as u32;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    Civil {
        year: yoe + era * 400 + i64::from(month <= 2),
        month,
        day,
        hour: rem / 3600,
        minute: rem / 60 % 60,
        second: rem % 60,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_dates() {
        let c = civil(951_782_400);
        assert_eq!((c.year, c.month, c.day), (2000, 2, 29), "a leap day");
        let c = civil(1_795_638_645);
        assert_eq!(
            (c.year, c.month, c.day, c.hour, c.minute, c.second),
            (2026, 11, 25, 20, 30, 45)
        );
        assert_eq!(civil(0).year, 1970);
    }
}
