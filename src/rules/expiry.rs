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

/// SPEC 4 step 8 (v1.3): a leaf to renew (`leaves`: kubeadm's name, its
/// CA's name) whose CA ends within the threshold cannot be moved past it:
/// kubeadm ends a leaf no later than its CA. Each such CA (`cas`: name,
/// notAfter), in its words, in the order of `cas`; empty when none.
pub fn ca_walls<'a>(
    leaves: impl IntoIterator<Item = (&'a str, &'a str)>,
    cas: &[(&str, OffsetDateTime)],
    now: OffsetDateTime,
    threshold_days: u32,
) -> Vec<String> {
    let leaves: Vec<(&str, &str)> = leaves.into_iter().collect();
    cas.iter()
        .filter(|(ca, end)| {
            judge(now, *end, threshold_days) != Expiry::Ok && leaves.iter().any(|(_, c)| c == ca)
        })
        .map(|(ca, end)| {
            format!(
                "ca {ca} ends {}: renewing its leaves cannot move them past the threshold; the CA must be rotated (never done here)",
                crate::rules::clock::rfc3339(*end)
            )
        })
        .collect()
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

/// The expired leaves as one problem (SPEC 6, v1.3): `leaves` (name,
/// notAfter) longest expired first; one leaf keeps its own words; several
/// are `11 leaves expired 2026-12-02 (2 days ago): admin.conf, ...` (`the
/// first` when their dates differ). None: no leaf expired.
pub fn expired_folded(leaves: &[(&str, OffsetDateTime)], now: OffsetDateTime) -> Option<String> {
    let (first, t) = *leaves.first()?;
    if leaves.len() == 1 {
        return Some(expired_reason(first, t, now));
    }
    let same_day = leaves.iter().all(|(_, x)| date(*x) == date(t));
    let names: Vec<&str> = leaves.iter().map(|(n, _)| *n).collect();
    Some(format!(
        "{} leaves expired{} {} ({}): {}",
        leaves.len(),
        if same_day { "" } else { ", the first" },
        date(t),
        ago(now, t),
        names.join(", ")
    ))
}

/// A leaf as the renewal's refusal judges it (SPEC 11): kubeadm's name,
/// its node path and its validity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeafValidity {
    pub name: String,
    pub path: String,
    pub not_before: OffsetDateTime,
    pub not_after: OffsetDateTime,
}

/// The commands a refusal offers next (SPEC 6, v1.3: a step that works
/// when pasted), as the caller names the runbook, each under a fresh
/// operation ID (the refused one has its receipt: pasting it again would
/// only replay that): the recovery (`--recover-expired`) and a renewal.
/// A clock problem's step is the refused mode again.
#[derive(Debug, Clone, Copy)]
pub struct Next<'a> {
    pub recover: &'a str,
    pub renew: &'a str,
}

/// What a refused renewal says next (SPEC 11; SPEC 6 v1.3: a step that
/// works when pasted): `recover` is the recovery's command as the caller
/// names it, with a fresh operation ID (the refused one has its receipt),
/// last: a message cut to fit a receipt keeps its end.
pub fn expired_next(recover: &str) -> String {
    format!(
        "next, recover it (then every other control-plane node whose certificates expired; --kubeadm-config with the saved ClusterConfiguration is recommended): {recover}"
    )
}

/// Why a renewal must not begin on these leaves at `now` (SPEC 11, v1.2),
/// or None. A leaf not valid yet is a clock problem and is named first (a
/// clock that is wrong makes every expiry suspect); otherwise an expired
/// leaf: the health gate cannot pass (kube-apiserver and etcd refuse an
/// expired certificate), so waiting for it is pointless. The words name
/// the leaf, its path and the instant, then at most three more leaves, and
/// end with [`expired_next`] of `recover` (the caller's fresh command).
pub fn refusal(leaves: &[LeafValidity], now: OffsetDateTime, next: Next<'_>) -> Option<String> {
    expired_refusal(leaves, now, next, |first, others| {
        format!(
            "leaf {} expired {} ({}; {}){others}: the health gate cannot pass while a leaf is expired, so nothing was changed; {}",
            first.name,
            crate::rules::clock::rfc3339(first.not_after),
            ago(now, first.not_after),
            first.path,
            expired_next(next.recover)
        )
    })
}

/// A clock problem (the refused mode again: `next.renew`), else the
/// longest expired leaf in `words` (the leaf, then the other leaves'
/// names, or only their count when the names would not fit a receipt's
/// message), else None.
fn expired_refusal(
    leaves: &[LeafValidity],
    now: OffsetDateTime,
    next: Next<'_>,
    words: impl Fn(&LeafValidity, String) -> String,
) -> Option<String> {
    clock_refusal(leaves, now, next.renew).or_else(|| {
        let expired = expired_first(leaves, now);
        let (first, rest) = expired.split_first()?;
        Some(fitted(words(first, others(rest)), || {
            words(first, count(rest))
        }))
    })
}

/// `full` when it fits a receipt's message, else `short()`: the pasted
/// step at the end must survive (a long `--root` or program path leaves
/// no room for the names of the other leaves).
fn fitted(full: String, short: impl FnOnce() -> String) -> String {
    if full.len() <= crate::rules::receipt::MAX_MESSAGE_BYTES {
        full
    } else {
        short()
    }
}

/// ` and 4 more`: how many, without their names.
fn count(rest: &[&LeafValidity]) -> String {
    match rest.len() {
        0 => String::new(),
        n => format!(" and {n} more"),
    }
}

/// Why a plain renewal must not finish a recovery's unfinished work (SPEC
/// 11, v1.3), or None: while a leaf is expired only `--recover-expired`
/// resumes it (`who`: the recovery, `at`: where it stopped, in plain
/// words); once the leaves are valid the renewal finishes it, gate and all.
pub fn resumed_recovery_refusal(
    leaves: &[LeafValidity],
    now: OffsetDateTime,
    (who, at): (&str, &str),
    next: Next<'_>,
) -> Option<String> {
    expired_refusal(leaves, now, next, |first, others| {
        format!(
            "the unfinished recovery {who} (stopped while {at}) is resumed only by --recover-expired while a leaf is expired: leaf {} expired {}{others}; a renewal never runs a recovery's steps, so nothing was changed; next: {}",
            first.name,
            crate::rules::clock::rfc3339(first.not_after),
            next.recover
        )
    })
}

/// Why a recovery (`--recover-expired`, SPEC 11) must not begin, or None:
/// a clock problem as for a renewal; unless it resumes a recovery's own
/// work (`needs_expired` false: its renewal may be done already), no leaf
/// expired (a healthy node, or a renewal's unfinished work on it, is
/// renewed normally, gate and all: `next.renew`, a renewal under a fresh
/// operation ID).
pub fn recovery_refusal(
    leaves: &[LeafValidity],
    now: OffsetDateTime,
    needs_expired: bool,
    next: Next<'_>,
) -> Option<String> {
    let renew = next.renew;
    clock_refusal(leaves, now, next.recover).or_else(|| {
        (needs_expired && expired_first(leaves, now).is_empty()).then(|| {
            format!("no leaf has expired: --recover-expired is for a node whose certificates already expired and skips the health gate; nothing was changed; renew this node normally, with the health gate (a new operation ID: this one has its receipt): {renew}")
        })
    })
}

/// The expired leaves, the longest expired first: the words a recovery
/// reports (`etcd-peer expired 2027-03-01`), empty when none.
pub fn expired_words(leaves: &[LeafValidity], now: OffsetDateTime) -> Vec<String> {
    expired_first(leaves, now)
        .iter()
        .map(|l| format!("{} expired {}", l.name, date(l.not_after)))
        .collect()
}

fn expired_first(leaves: &[LeafValidity], now: OffsetDateTime) -> Vec<&LeafValidity> {
    let mut expired: Vec<&LeafValidity> = leaves
        .iter()
        .filter(|l| is_expired(now, l.not_after))
        .collect();
    expired.sort_by_key(|l| (l.not_after, l.name.clone()));
    expired
}

/// ` and 4 more (b, c, d, ...)`: at most three names.
fn others(rest: &[&LeafValidity]) -> String {
    match rest.len() {
        0 => String::new(),
        n => {
            let mut names: Vec<&str> = rest.iter().take(3).map(|l| l.name.as_str()).collect();
            if n > 3 {
                names.push("...");
            }
            format!(" and {n} more ({})", names.join(", "))
        }
    }
}

/// A leaf not valid yet at `now`: the node's clock is wrong (SPEC 11).
fn clock_refusal(leaves: &[LeafValidity], now: OffsetDateTime, again: &str) -> Option<String> {
    let mut early: Vec<&LeafValidity> = leaves.iter().filter(|l| l.not_before > now).collect();
    early.sort_by_key(|l| (std::cmp::Reverse(l.not_before), l.name.clone()));
    let (first, rest) = early.split_first()?;
    Some(format!(
        "the node's clock ({}) is before leaf {}'s notBefore {} ({}){}: a clock problem, not an expiry; nothing was changed; set the node's clock right (chrony, timedatectl), then run again under a new operation ID (this one has its receipt): {again}",
        crate::rules::clock::rfc3339(now),
        first.name,
        crate::rules::clock::rfc3339(first.not_before),
        first.path,
        others(rest)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    #[test]
    fn expired_leaves_fold_into_one_problem() {
        let now = datetime!(2026-12-04 12:00 UTC);
        let d = datetime!(2026-12-02 10:00 UTC);
        assert_eq!(expired_folded(&[], now), None);
        assert_eq!(
            expired_folded(&[("apiserver", d)], now).unwrap(),
            "leaf apiserver expired 2026-12-02 (2 days ago)"
        );
        assert_eq!(
            expired_folded(&[("admin.conf", d), ("apiserver", d)], now).unwrap(),
            "2 leaves expired 2026-12-02 (2 days ago): admin.conf, apiserver"
        );
        let later = datetime!(2026-12-03 10:00 UTC);
        assert_eq!(
            expired_folded(&[("admin.conf", d), ("etcd-peer", later)], now).unwrap(),
            "2 leaves expired, the first 2026-12-02 (2 days ago): admin.conf, etcd-peer"
        );
    }

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
    fn leaf(name: &str, not_before: OffsetDateTime, not_after: OffsetDateTime) -> LeafValidity {
        LeafValidity {
            name: name.to_string(),
            path: format!("/etc/kubernetes/pki/{name}.crt"),
            not_before,
            not_after,
        }
    }

    const BEGIN: OffsetDateTime = datetime!(2026-06-01 00:00:00 UTC);

    #[test]
    fn no_refusal_while_every_leaf_is_valid_even_when_due() {
        let leaves = [
            leaf("apiserver", BEGIN, NOW + time::Duration::days(3)),
            leaf("etcd-peer", BEGIN, NOW),
        ];
        assert_eq!(
            refusal(&leaves, NOW, NEXT),
            None,
            "notAfter itself is valid"
        );
        assert_eq!(refusal(&[], NOW, NEXT), None);
    }

    /// A refusal's fresh commands, as long as a real one under a `--root`.
    const RECOVER: &str = "nvke-cert-runbook --root /tmp/.tmpAbCdEf/node-root --operation-id recover-20261202T000000Z --recover-expired";
    const RENEW: &str =
        "nvke-cert-runbook --root /tmp/.tmpAbCdEf/node-root --operation-id manual-20261202T000000Z";
    const NEXT: Next<'static> = Next {
        recover: RECOVER,
        renew: RENEW,
    };

    #[test]
    fn a_plain_renewal_never_finishes_a_recovery_while_a_leaf_is_expired() {
        let expired = [
            leaf("apiserver", BEGIN, datetime!(2026-11-30 00:00:00 UTC)),
            leaf("etcd-peer", BEGIN, NOW + time::Duration::days(90)),
        ];
        let r = resumed_recovery_refusal(&expired, NOW, ("op-r", "restarting etcd"), NEXT).unwrap();
        assert!(
            r.starts_with("the unfinished recovery op-r (stopped while restarting etcd) is resumed only by --recover-expired while a leaf is expired: leaf apiserver expired 2026-11-30T00:00:00Z; "),
            "{r}"
        );
        assert!(r.ends_with(&format!("next: {RECOVER}")), "{r}");
        let valid = [leaf("apiserver", BEGIN, NOW + time::Duration::days(3))];
        assert_eq!(
            resumed_recovery_refusal(&valid, NOW, ("op-r", "renewing"), NEXT),
            None,
            "leaves valid again: the renewal finishes the work, gate and all"
        );
        let all: Vec<_> = crate::rules::pki::LEAVES
            .iter()
            .map(|l| LeafValidity {
                name: l.name.to_string(),
                path: format!("/{}", l.path),
                not_before: BEGIN,
                not_after: BEGIN,
            })
            .collect();
        let r = resumed_recovery_refusal(
            &all,
            NOW,
            (
                "cycle-2026-12-01@node-a",
                "restarting kube-controller-manager",
            ),
            NEXT,
        )
        .unwrap();
        assert!(
            r.len() <= 512,
            "fits a receipt's message: {} bytes",
            r.len()
        );
    }

    #[test]
    fn an_expired_leaf_is_named_with_its_path_instant_and_the_next_step() {
        let leaves = [
            leaf("apiserver", BEGIN, datetime!(2026-11-30 00:00:00 UTC)),
            leaf("etcd-peer", BEGIN, NOW + time::Duration::days(90)),
        ];
        assert_eq!(
            refusal(&leaves, NOW, NEXT).unwrap(),
            format!("leaf apiserver expired 2026-11-30T00:00:00Z (2 days ago; /etc/kubernetes/pki/apiserver.crt): the health gate cannot pass while a leaf is expired, so nothing was changed; next, recover it (then every other control-plane node whose certificates expired; --kubeadm-config with the saved ClusterConfiguration is recommended): {RECOVER}")
        );
    }

    #[test]
    fn the_longest_expired_leaf_comes_first_then_at_most_three_more() {
        let names = ["a", "b", "c", "d", "e"];
        let leaves: Vec<_> = names
            .iter()
            .enumerate()
            .map(|(i, n)| leaf(n, BEGIN, NOW - time::Duration::days(5 - i as i64)))
            .collect();
        let r = refusal(&leaves, NOW, NEXT).unwrap();
        assert!(
            r.starts_with("leaf a expired 2026-11-27T00:00:00Z (5 days ago; "),
            "{r}"
        );
        assert!(r.contains(") and 4 more (b, c, d, ...): "), "{r}");
        let all: Vec<_> = crate::rules::pki::LEAVES
            .iter()
            .map(|l| LeafValidity {
                name: l.name.to_string(),
                path: format!("/{}", l.path),
                not_before: BEGIN,
                not_after: BEGIN,
            })
            .collect();
        let r = refusal(&all, NOW, NEXT).unwrap();
        assert!(
            r.len() <= 512,
            "every leaf expired still fits a receipt's message: {} bytes",
            r.len()
        );
    }

    #[test]
    fn a_clock_before_a_leafs_not_before_is_a_clock_problem_named_first() {
        let leaves = [
            leaf("apiserver", BEGIN, datetime!(2026-11-30 00:00:00 UTC)),
            leaf(
                "etcd-server",
                NOW + time::Duration::hours(1),
                NOW + time::Duration::days(365),
            ),
        ];
        let r = refusal(&leaves, NOW, NEXT).unwrap();
        assert!(
            r.starts_with("the node's clock (2026-12-02T00:00:00Z) is before leaf etcd-server's notBefore 2026-12-02T01:00:00Z (/etc/kubernetes/pki/etcd-server.crt): a clock problem, not an expiry; "),
            "{r}"
        );
    }

    #[test]
    fn a_recovery_needs_an_expired_leaf_when_fresh_and_never_a_right_clock() {
        let fresh_leaves = [leaf("apiserver", BEGIN, NOW + time::Duration::days(3))];
        let r = recovery_refusal(&fresh_leaves, NOW, true, NEXT).unwrap();
        assert!(r.starts_with("no leaf has expired: "), "{r}");
        assert!(r.ends_with(&format!(": {RENEW}")), "a pasteable step: {r}");
        assert_eq!(
            recovery_refusal(&fresh_leaves, NOW, false, NEXT),
            None,
            "resumed recovery work is finished"
        );
        let expired = [
            leaf("apiserver", BEGIN, datetime!(2026-11-30 00:00:00 UTC)),
            leaf("etcd-peer", BEGIN, datetime!(2026-11-01 00:00:00 UTC)),
        ];
        assert_eq!(recovery_refusal(&expired, NOW, true, NEXT), None);
        assert_eq!(
            expired_words(&expired, NOW),
            [
                "etcd-peer expired 2026-11-01",
                "apiserver expired 2026-11-30"
            ]
        );
        let early = [leaf(
            "apiserver",
            NOW + time::Duration::hours(1),
            NOW + time::Duration::days(9),
        )];
        for fresh in [true, false] {
            let r = recovery_refusal(&early, NOW, fresh, NEXT).unwrap();
            assert!(r.contains("a clock problem, not an expiry"), "{r}");
            // The recovery again, under a fresh ID (SPEC 6, v1.3).
            assert!(r.ends_with(&format!(": {RECOVER}")), "{r}");
        }
        let r = refusal(&early, NOW, NEXT).unwrap();
        assert!(
            r.ends_with(&format!(
                "under a new operation ID (this one has its receipt): {RENEW}"
            )),
            "{r}"
        );
    }

    /// SPEC 4 step 8 (v1.3): a due leaf under a CA that ends within the
    /// threshold (or has ended) names the CA; a CA with no leaf to renew
    /// under it, or one ending after the threshold, does not.
    #[test]
    fn a_ca_ending_within_the_threshold_walls_its_due_leaves() {
        let now = datetime!(2027-05-15 00:00:00 UTC);
        let cas = [
            ("ca", datetime!(2027-06-10 00:00:00 UTC)),
            ("etcd-ca", datetime!(2027-05-01 00:00:00 UTC)),
            ("front-proxy-ca", datetime!(2035-01-01 00:00:00 UTC)),
        ];
        assert_eq!(
            ca_walls([("apiserver", "ca"), ("front-proxy-client", "front-proxy-ca")], &cas, now, 30),
            ["ca ca ends 2027-06-10T00:00:00Z: renewing its leaves cannot move them past the threshold; the CA must be rotated (never done here)"]
        );
        assert_eq!(
            ca_walls([("etcd-peer", "etcd-ca")], &cas, now, 30).len(),
            1,
            "ended"
        );
        assert!(ca_walls([("front-proxy-client", "front-proxy-ca")], &cas, now, 30).is_empty());
        assert!(ca_walls([], &cas, now, 30).is_empty());
        // 26 days left: outside a threshold of 7.
        assert!(ca_walls([("apiserver", "ca")], &cas, now, 7).is_empty());
    }
}
