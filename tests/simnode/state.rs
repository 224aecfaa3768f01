//! `containers.json`: the kubelet stand-in's view of the container runtime,
//! written atomically by the kubelet and read by crictl.

use crate::sim::Sim;
use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;

pub const CREATED: &str = "CONTAINER_CREATED";
pub const RUNNING: &str = "CONTAINER_RUNNING";
pub const EXITED: &str = "CONTAINER_EXITED";
pub const SANDBOX_READY: &str = "SANDBOX_READY";
pub const SANDBOX_NOTREADY: &str = "SANDBOX_NOTREADY";

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContainersFile {
    /// pid of the kubelet that wrote the file.
    pub kubelet_pid: u32,
    /// unix nanos (string) of the last write.
    pub updated_at: String,
    /// In creation order (oldest first).
    pub containers: Vec<Container>,
    /// Pod sandboxes, in creation order (oldest first).
    #[serde(default)]
    pub sandboxes: Vec<Sandbox>,
}

/// A pod sandbox as the CRI reports it (`crictl pods`): one per pod
/// lifetime; READY while the pod runs, NOTREADY once it stopped.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Sandbox {
    /// 64 lowercase hex digits.
    pub id: String,
    /// The kubelet's pod name (`etcd-cp-1`; an API pod's own name).
    pub name: String,
    pub uid: String,
    pub namespace: String,
    /// Number of earlier sandboxes of the same pod UID.
    pub attempt: u32,
    /// SANDBOX_READY or SANDBOX_NOTREADY.
    pub state: String,
    /// unix nanos, as a string.
    pub created_at: String,
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
    pub runtime_handler: String,
}

impl Sandbox {
    pub fn created_nanos(&self) -> i128 {
        self.created_at.parse().unwrap_or(0)
    }
}

/// A volume mount of the container: `containerPath` inside the container is
/// `hostPath` on the node (under the simulation root).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Mount {
    pub container_path: String,
    pub host_path: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Container {
    /// 64 lowercase hex digits.
    pub id: String,
    pub pod_sandbox_id: String,
    /// The static pod's metadata.name as in the manifest (`etcd`).
    pub pod_name: String,
    /// The kubelet's pod name, `<metadata.name>-<node>` (`etcd-cp-1`).
    pub pod_full_name: String,
    pub namespace: String,
    pub pod_uid: String,
    /// The file in the manifests directory the pod came from.
    pub manifest: String,
    /// The container name (spec.containers[].name).
    pub name: String,
    pub image: String,
    /// CONTAINER_RUNNING or CONTAINER_EXITED.
    pub state: String,
    /// unix nanos, as strings (crictl's JSON encoding of int64).
    pub created_at: String,
    pub started_at: String,
    pub finished_at: String,
    pub exit_code: i32,
    /// Number of earlier containers of the same pod + container name.
    pub attempt: u32,
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
    /// pid of the stand-in process (kube-apiserver, etcd), if any.
    pub pid: Option<u32>,
    /// The port the stand-in process listens on, if any.
    pub port: Option<u16>,
    /// Volume mounts from the manifest (used to map paths for `crictl exec`).
    #[serde(default)]
    pub mounts: Vec<Mount>,
    /// Stand-in process stdout/stderr, if any.
    pub log_path: Option<PathBuf>,
}

impl Container {
    pub fn is_running(&self) -> bool {
        self.state == RUNNING
    }
    pub fn created_nanos(&self) -> i128 {
        self.created_at.parse().unwrap_or(0)
    }
}

/// Reads `containers.json`; a missing file is an empty runtime (no kubelet
/// has run yet).
pub fn load(sim: &Sim) -> Result<ContainersFile> {
    let path = sim.containers_path();
    match std::fs::read(&path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .with_context(|| format!("failed to parse {}", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(ContainersFile::default()),
        Err(e) => Err(e).with_context(|| format!("failed to read {}", path.display())),
    }
}
