//! Expiry has a severity (SPEC v1.2, section 10 "Expiry severity"): a leaf
//! past its notAfter at "now" is `expired` (an operator must act), one
//! within the threshold is `due` (the controller renews it; clean), any
//! other is `ok`. Pure: the modes print what this decides.

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

/// How soon a certificate expires, at "now" and the threshold (v1.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Expiry {
    /// Not within the threshold.
    Ok,
    /// Within the threshold: due for renewal.
    Due,
    /// Past its notAfter: ACTION NEEDED.
    Expired,
}

/// The severity of a certificate whose notAfter is `not_after`. A
/// certificate is expired from its notAfter on (RFC 5280: notAfter is the
/// last instant of validity, so the instant itself still counts as valid).
pub fn judge(now: OffsetDateTime, not_after: OffsetDateTime, threshold_days: u32) -> Expiry {
    if is_expired(now, not_after) {
        Expiry::Expired
    } else if not_after - now <= time::Duration::days(i64::from(threshold_days)) {
        Expiry::Due
    } else {
        Expiry::Ok
    }
}

/// Past its notAfter at `now` (the instant itself is still valid).
pub fn is_expired(now: OffsetDateTime, not_after: OffsetDateTime) -> bool {
    now > not_after
}

/// The calendar date of `t` (UTC), e.g. `2026-11-30`.
pub fn date(t: OffsetDateTime) -> String {
    let t = t.to_offset(time::UtcOffset::UTC);
    format!("{:04}-{:02}-{:02}", t.year(), u8::from(t.month()), t.day())
}

fn days(n: i64) -> String {
    if n == 1 {
        "1 day".to_string()
    } else {
        format!("{n} days")
    }
}

/// `2 days ago`, `less than a day ago`: whole days since `t`.
pub fn ago(now: OffsetDateTime, t: OffsetDateTime) -> String {
    match (now - t).whole_days() {
        n if n < 1 => "less than a day ago".to_string(),
        n => format!("{} ago", days(n)),
    }
}

/// `in 11 days`, `in less than a day`: whole days until `t`.
pub fn within(now: OffsetDateTime, t: OffsetDateTime) -> String {
    match (t - now).whole_days() {
        n if n < 1 => "in less than a day".to_string(),
        n => format!("in {}", days(n)),
    }
}

/// The leaf a headline names: the most severe, and within a severity the
/// soonest (an expired leaf before every due one, the longest expired
/// first).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Worst {
    pub name: String,
    pub not_after: OffsetDateTime,
    pub expiry: Expiry,
    /// How many leaves share this severity.
    pub count: usize,
}

impl Worst {
    /// The headline's words: `apiserver expired 2026-11-30 (2 days ago)`,
    /// `etcd-peer in 11 days (2026-12-13)`; `(and 3 more)` when others
    /// share the severity.
    pub fn words(&self, now: OffsetDateTime) -> String {
        let more = match self.count {
            0 | 1 => String::new(),
            n => format!(" (and {} more)", n - 1),
        };
        match self.expiry {
            Expiry::Expired => format!(
                "{} expired {} ({}){more}",
                self.name,
                date(self.not_after),
                ago(now, self.not_after)
            ),
            _ => format!(
                "{} {} ({}){more}",
                self.name,
                within(now, self.not_after),
                date(self.not_after)
            ),
        }
    }
}

/// The leaf the headline names among `leaves` (name, notAfter), when any is
/// expired or due; `None` when all are ok.
pub fn worst<'a>(
    leaves: impl IntoIterator<Item = (&'a str, OffsetDateTime)>,
    now: OffsetDateTime,
    threshold_days: u32,
) -> Option<Worst> {
    let judged: Vec<(&str, OffsetDateTime, Expiry)> = leaves
        .into_iter()
        .map(|(n, t)| (n, t, judge(now, t, threshold_days)))
        .filter(|(_, _, e)| *e != Expiry::Ok)
        .collect();
    let top = judged.iter().map(|(_, _, e)| *e).max()?;
    let count = judged.iter().filter(|(_, _, e)| *e == top).count();
    judged
        .iter()
        .filter(|(_, _, e)| *e == top)
        .min_by_key(|(n, t, _)| (*t, *n))
        .map(|(n, t, e)| Worst {
            name: n.to_string(),
            not_after: *t,
            expiry: *e,
            count,
        })
}

/// A check reason or a status problem for an expired leaf:
/// `leaf apiserver expired 2026-11-30 (2 days ago)`.
pub fn expired_reason(name: &str, not_after: OffsetDateTime, now: OffsetDateTime) -> String {
    format!(
        "leaf {name} expired {} ({})",
        date(not_after),
        ago(now, not_after)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    const NOW: OffsetDateTime = datetime!(2026-12-02 00:00:00 UTC);

    #[test]
    fn severity_at_the_edges() {
        assert_eq!(judge(NOW, NOW, 30), Expiry::Due, "notAfter itself is valid");
        assert_eq!(
            judge(NOW, NOW - time::Duration::seconds(1), 30),
            Expiry::Expired
        );
        assert_eq!(judge(NOW, NOW + time::Duration::days(30), 30), Expiry::Due);
        assert_eq!(
            judge(
                NOW,
                NOW + time::Duration::days(30) + time::Duration::seconds(1),
                30
            ),
            Expiry::Ok
        );
        assert_eq!(
            judge(NOW, datetime!(2027-12-02 00:00:00 UTC), 90),
            Expiry::Ok
        );
    }

    #[test]
    fn words_say_the_date_and_how_long() {
        let w = worst(
            [
                ("apiserver", datetime!(2026-11-30 00:00:00 UTC)),
                ("etcd-peer", datetime!(2026-12-13 00:00:00 UTC)),
            ],
            NOW,
            30,
        )
        .unwrap();
        assert_eq!(w.words(NOW), "apiserver expired 2026-11-30 (2 days ago)");
        let w = worst(
            [
                ("etcd-peer", datetime!(2026-12-13 00:00:00 UTC)),
                ("apiserver", datetime!(2027-12-13 00:00:00 UTC)),
            ],
            NOW,
            30,
        )
        .unwrap();
        assert_eq!(w.words(NOW), "etcd-peer in 11 days (2026-12-13)");
        assert_eq!(
            ago(NOW, NOW - time::Duration::hours(3)),
            "less than a day ago"
        );
        assert_eq!(ago(NOW, NOW - time::Duration::hours(25)), "1 day ago");
        assert_eq!(
            within(NOW, NOW + time::Duration::hours(3)),
            "in less than a day"
        );
    }

    #[test]
    fn the_headline_names_expired_first_then_the_soonest() {
        let leaves = [
            ("front-proxy-client", datetime!(2026-12-03 00:00:00 UTC)),
            ("apiserver", datetime!(2026-11-30 00:00:00 UTC)),
            ("etcd-server", datetime!(2026-11-01 00:00:00 UTC)),
            ("admin.conf", datetime!(2027-06-01 00:00:00 UTC)),
        ];
        let w = worst(leaves, NOW, 30).unwrap();
        assert_eq!(w.name, "etcd-server");
        assert_eq!(w.expiry, Expiry::Expired);
        assert_eq!(w.count, 2);
        assert_eq!(
            w.words(NOW),
            "etcd-server expired 2026-11-01 (31 days ago) (and 1 more)"
        );
        assert_eq!(
            worst(
                [("admin.conf", datetime!(2027-06-01 00:00:00 UTC))],
                NOW,
                30
            ),
            None
        );
        assert_eq!(worst([], NOW, 30), None);
    }

    #[test]
    fn the_expired_reason_never_says_a_negative_count() {
        let r = expired_reason("apiserver", datetime!(2026-11-30 00:00:00 UTC), NOW);
        assert_eq!(r, "leaf apiserver expired 2026-11-30 (2 days ago)");
        assert!(!r.contains("in -") && !r.contains("-2"));
    }
}
