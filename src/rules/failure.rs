//! How a renewal stops and where it stands, as values: why a run stopped
//! short ([`Fail`], its [`Cause`] typed until it is said), how it ended
//! well ([`Success`]). Where the work stands is
//! `rules::resume::Progress`. Pure.

use crate::rules::component::Component;
use crate::rules::outcome::Phase;

/// Why a run stopped short: where (its phase, the component it was at)
/// and what (its [`Cause`], said only when the result is written).
#[derive(Debug, Clone)]
pub(crate) struct Fail {
    pub(crate) phase: Phase,
    pub(crate) cause: Cause,
    pub(crate) component: Option<Component>,
}

/// What stopped a run, typed until it is said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Cause {
    /// A signal, or the controller's deadline: why, as the flag says it
    /// (with what the attempt had not done yet).
    Cancelled(String),
    /// The health gate or a wait of a restart: what it saw.
    Unhealthy(String),
    /// `what` serves a certificate that is not the renewed file `path`
    /// (a node path).
    NotRenewed { what: String, path: String },
    /// A panic in a step, caught.
    Panic { phase: Phase, why: String },
    /// A step's own words.
    Said(String),
}

impl std::fmt::Display for Cause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Cause::Cancelled(s) | Cause::Unhealthy(s) | Cause::Said(s) => f.write_str(s),
            Cause::NotRenewed { what, path } => write!(f, "{what} {NOT_RENEWED} {path}"),
            Cause::Panic { phase, why } => {
                write!(f, "internal error (a panic) at phase {phase}: {why}")
            }
        }
    }
}

/// What a served certificate that is not the renewed one is called.
const NOT_RENEWED: &str = "does not serve the renewed certificate";

impl Fail {
    /// A signal or the deadline stopped it: the outcome is `cancelled`.
    pub(crate) fn cancelled(&self) -> bool {
        matches!(self.cause, Cause::Cancelled(_))
    }

    /// The failure in words, as the result and the receipt say it.
    pub(crate) fn message(&self) -> String {
        self.cause.to_string()
    }

    /// Stopped by a signal or the deadline (`why`: as the flag says it).
    pub(crate) fn cancel(why: String, component: Option<Component>) -> Fail {
        Fail {
            phase: Phase::Cancelled,
            cause: Cause::Cancelled(why),
            component,
        }
    }
}

impl Fail {
    /// A panic in a step at `phase`, caught (`why`: its payload's text).
    pub(crate) fn panic(phase: Phase, why: String, component: Option<Component>) -> Fail {
        Fail {
            phase,
            cause: Cause::Panic { phase, why },
            component,
        }
    }
}

/// The text of a panic's payload.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_string())
}

/// A step's failure in its own words.
pub(crate) fn fail(phase: Phase, message: impl Into<String>) -> Fail {
    Fail {
        phase,
        cause: Cause::Said(message.into()),
        component: None,
    }
}

/// The restart of `c` failed.
pub(crate) fn restart_failed(c: Component, message: impl Into<String>) -> Fail {
    Fail {
        phase: Phase::Restart(c),
        cause: Cause::Said(message.into()),
        component: Some(c),
    }
}

/// How the steps ended a run that did not fail.
pub(crate) enum Success {
    /// Nothing was due: what was found.
    Unchanged(String),
    Renewed,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_is_typed_until_it_is_said() {
        let f = Fail {
            phase: Phase::Postflight,
            cause: Cause::NotRenewed {
                what: "etcd".into(),
                path: "/etc/kubernetes/pki/etcd/server.crt".into(),
            },
            component: None,
        };
        assert!(!f.cancelled());
        assert_eq!(
            f.message(),
            "etcd does not serve the renewed certificate /etc/kubernetes/pki/etcd/server.crt"
        );
        let panic = Cause::Panic {
            phase: Phase::RenewCerts,
            why: "boom".into(),
        };
        assert_eq!(
            panic.to_string(),
            "internal error (a panic) at phase renew-certs: boom"
        );
        let c = Fail::cancel("SIGTERM".into(), Some(Component::Etcd));
        assert!(c.cancelled() && c.phase == Phase::Cancelled);
        assert_eq!(c.message(), "SIGTERM");
        assert!(!fail(Phase::Health, "x").cancelled());
        assert_eq!(restart_failed(Component::Etcd, "y").message(), "y");
    }
}
