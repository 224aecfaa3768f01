//! Time: RFC 3339 UTC rendering and parsing, and "now" (real or fixed by `--now`).

use time::format_description::well_known::Rfc3339;
use time::{OffsetDateTime, UtcOffset};

/// Render as RFC 3339 UTC with whole seconds, e.g. `2026-11-30T00:00:00Z`.
pub fn rfc3339(t: OffsetDateTime) -> String {
    let t = t
        .to_offset(UtcOffset::UTC)
        .replace_nanosecond(0)
        .unwrap_or(t);
    t.format(&Rfc3339)
        .unwrap_or_else(|_| "invalid-time".to_string())
}

/// `YYYYMMDDTHHMMSSZ`: an instant as a name's part (fresh operation IDs,
/// set-aside copies).
pub fn stamp(t: OffsetDateTime) -> String {
    rfc3339(t).replace([':', '-'], "")
}

/// Parse an RFC 3339 timestamp. `require_utc` refuses any offset but `Z`.
pub fn parse_rfc3339(s: &str, require_utc: bool) -> Result<OffsetDateTime, TimeError> {
    if require_utc && !s.ends_with('Z') {
        return Err(TimeError::NotUtc(s.to_string()));
    }
    OffsetDateTime::parse(s, &Rfc3339).map_err(|e| TimeError::NotRfc3339(s.to_string(), e))
}

/// Why a timestamp was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TimeError {
    #[error("timestamp {0:?} is not UTC (must end in Z)")]
    NotUtc(String),
    #[error("timestamp {0:?} is not RFC 3339: {1}")]
    NotRfc3339(String, time::error::Parse),
}

/// Whole days from `now` until `t` (negative once past), rounded toward
/// negative infinity so that "0 days left" means expiring within a day.
pub fn days_until(now: OffsetDateTime, t: OffsetDateTime) -> i64 {
    // OffsetDateTime subtraction saturates (no panic) over the whole range.
    let secs = (t - now).whole_seconds();
    secs.div_euclid(86_400)
}

/// A clock: the real one, or one fixed by `--now`.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    fixed: Option<OffsetDateTime>,
}

impl Clock {
    pub fn real() -> Clock {
        Clock { fixed: None }
    }
    pub fn fixed(t: OffsetDateTime) -> Clock {
        Clock { fixed: Some(t) }
    }
    pub fn now(&self) -> OffsetDateTime {
        self.fixed.unwrap_or_else(OffsetDateTime::now_utc)
    }
    pub fn is_fixed(&self) -> bool {
        self.fixed.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    #[test]
    fn renders_and_parses_utc() {
        let t = datetime!(2026-11-30 00:00:00 UTC);
        assert_eq!(rfc3339(t), "2026-11-30T00:00:00Z");
        assert_eq!(parse_rfc3339("2026-11-30T00:00:00Z", true).unwrap(), t);
        assert!(parse_rfc3339("2026-11-30T01:00:00+01:00", true).is_err());
        assert!(parse_rfc3339("2026-11-30T01:00:00+01:00", false).is_ok());
        assert!(parse_rfc3339("yesterday", false).is_err());
    }

    #[test]
    fn days_round_down() {
        let now = datetime!(2026-11-30 00:00:00 UTC);
        assert_eq!(days_until(now, datetime!(2026-12-30 00:00:00 UTC)), 30);
        assert_eq!(days_until(now, datetime!(2026-12-29 23:59:59 UTC)), 29);
        assert_eq!(days_until(now, datetime!(2026-11-29 23:59:59 UTC)), -1);
    }
}
