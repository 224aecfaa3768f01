//! The API's unavailability during one restart (SPEC 7, v1.2): the longest
//! run of failed `/readyz` probes. Pure.
//!
//! A window opens at the start of a failed probe and closes at the start of
//! the next successful one (the e2e lab measures its windows the same way,
//! tests/e2e/traffic.rs); a window still open when the probing stops closes
//! there. With probes every 200 ms each end is known to within one
//! interval.

/// One probe: when it started (milliseconds since the probing started) and
/// whether kube-apiserver answered `/readyz` with 200.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Probe {
    pub at_ms: u64,
    pub ok: bool,
}

/// The longest window of unavailability, in milliseconds, over `probes`
/// (in the order they ran) and the probing's end `end_ms`. Zero when every
/// probe succeeded or none ran.
pub fn longest_unavailable_ms(probes: &[Probe], end_ms: u64) -> u64 {
    let mut longest = 0;
    let mut open: Option<u64> = None;
    for p in probes {
        match (p.ok, open) {
            (true, Some(from)) => {
                longest = longest.max(p.at_ms.saturating_sub(from));
                open = None;
            }
            (false, None) => open = Some(p.at_ms),
            _ => {}
        }
    }
    if let Some(from) = open {
        longest = longest.max(end_ms.saturating_sub(from));
    }
    longest
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probes(s: &str) -> Vec<Probe> {
        // One character per 200 ms: '+' answered 200, '-' did not.
        s.chars()
            .enumerate()
            .map(|(i, c)| Probe {
                at_ms: i as u64 * 200,
                ok: c == '+',
            })
            .collect()
    }

    #[test]
    fn no_probe_or_every_probe_answered_is_zero() {
        assert_eq!(longest_unavailable_ms(&[], 1000), 0);
        assert_eq!(longest_unavailable_ms(&probes("+++++"), 1000), 0);
    }

    #[test]
    fn a_window_runs_from_the_first_failed_probe_to_the_next_answered_one() {
        // Failed at 200, 400, 600; answered at 800.
        assert_eq!(longest_unavailable_ms(&probes("+---+"), 1000), 600);
        // One failed probe between two answered ones: one interval.
        assert_eq!(longest_unavailable_ms(&probes("+-+"), 600), 200);
    }

    #[test]
    fn the_longest_window_counts_not_their_sum() {
        // Windows of 200, 600 and 400 ms.
        assert_eq!(longest_unavailable_ms(&probes("+-+---+--+"), 2000), 600);
    }

    #[test]
    fn a_window_still_open_closes_at_the_end_of_the_probing() {
        assert_eq!(longest_unavailable_ms(&probes("++--"), 900), 500);
        // An end before the last probe's start (clock granularity) is not
        // a negative window.
        assert_eq!(longest_unavailable_ms(&probes("-"), 0), 0);
    }

    #[test]
    fn probes_that_ran_late_measure_from_when_they_started() {
        let p = [
            Probe {
                at_ms: 0,
                ok: false,
            },
            // The first probe hung for 1 s: the next one starts late.
            Probe {
                at_ms: 1000,
                ok: true,
            },
        ];
        assert_eq!(longest_unavailable_ms(&p, 1200), 1000);
    }
}
