//! The four kubeadm control-plane static pods, in restart order.

use serde::{Deserialize, Serialize};
use std::fmt;

// The declaration order is the restart order of SPEC section 2 (etcd first).
// The doc comment is the contract's description (the schema's text).
/// One of the four control-plane static pods, in restart order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum Component {
    #[serde(rename = "etcd")]
    Etcd,
    #[serde(rename = "kube-apiserver")]
    KubeApiserver,
    #[serde(rename = "kube-controller-manager")]
    KubeControllerManager,
    #[serde(rename = "kube-scheduler")]
    KubeScheduler,
}

impl Component {
    /// All four, in restart order.
    pub const ALL: [Component; 4] = [
        Component::Etcd,
        Component::KubeApiserver,
        Component::KubeControllerManager,
        Component::KubeScheduler,
    ];

    /// The container name (and manifest stem) kubeadm gives it.
    pub fn name(self) -> &'static str {
        match self {
            Component::Etcd => "etcd",
            Component::KubeApiserver => "kube-apiserver",
            Component::KubeControllerManager => "kube-controller-manager",
            Component::KubeScheduler => "kube-scheduler",
        }
    }

    /// The manifest file name, e.g. `etcd.yaml`.
    pub fn manifest_file(self) -> String {
        format!("{}.yaml", self.name())
    }

    /// Parse the exact container name; anything else is `None`.
    pub fn from_name(s: &str) -> Option<Component> {
        Component::ALL.into_iter().find(|c| c.name() == s)
    }

    /// The component restarted after this one, if any.
    pub fn next(self) -> Option<Component> {
        let i = Component::ALL.iter().position(|c| *c == self)?;
        Component::ALL.get(i + 1).copied()
    }
}

impl fmt::Display for Component {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_and_names_round_trip() {
        let names: Vec<_> = Component::ALL.iter().map(|c| c.name()).collect();
        assert_eq!(
            names,
            [
                "etcd",
                "kube-apiserver",
                "kube-controller-manager",
                "kube-scheduler"
            ]
        );
        for c in Component::ALL {
            assert_eq!(Component::from_name(c.name()), Some(c));
        }
        assert_eq!(Component::from_name("Etcd"), None);
        assert_eq!(Component::from_name("etcd "), None);
        assert_eq!(Component::Etcd.next(), Some(Component::KubeApiserver));
        assert_eq!(Component::KubeScheduler.next(), None);
    }
}
