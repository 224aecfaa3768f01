//! Which container runtime endpoint crictl is given (SPEC 9, v1.1): the
//! caller's `--runtime-endpoint`, else the one the node's kubelet uses, else
//! none (crictl's own configuration, `/etc/crictl.yaml`, decides).
//!
//! The kubelet reads its configuration file (`/var/lib/kubelet/config.yaml`,
//! `containerRuntimeEndpoint`) and then its command line, where kubeadm puts
//! `$KUBELET_KUBEADM_ARGS` from `/var/lib/kubelet/kubeadm-flags.env`; a flag
//! given on the command line takes precedence over the file (kubelet's
//! `kubeletConfigFlagPrecedence`). So do we: the flags file first, then the
//! configuration file (docs/decisions.md, "Contract v1.1 decisions").

use crate::node::fsx::{Root, Trust, SMALL_FILE_MAX};

pub const KUBELET_CONFIG: &str = "var/lib/kubelet/config.yaml";
pub const KUBEADM_FLAGS: &str = "var/lib/kubelet/kubeadm-flags.env";

/// The endpoint crictl is run with, and why: the renewal prints it as is
/// (`runtimeEndpoint`, SPEC 9).
pub use crate::contract::{EndpointSource as Source, RuntimeEndpointUsed as RuntimeEndpoint};

impl RuntimeEndpoint {
    /// How output names it: `unix:///run/containerd/containerd.sock (kubelet-config)`.
    pub fn describe(&self) -> String {
        let src = match self.source {
            Source::Flag => "--runtime-endpoint",
            Source::KubeadmFlags => "/var/lib/kubelet/kubeadm-flags.env",
            Source::KubeletConfig => "/var/lib/kubelet/config.yaml",
            Source::Crictl => "crictl's own configuration",
        };
        match &self.endpoint {
            Some(e) => format!("{e} (from {src})"),
            None => format!("the endpoint of {src} (/etc/crictl.yaml or crictl's defaults)"),
        }
    }
}

/// A usable endpoint value: non-empty, no whitespace or control characters
/// (the rule `--runtime-endpoint` is checked by).
pub use crate::contract::cli::valid_endpoint as valid;

/// Why a node file names no usable runtime endpoint.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EndpointError {
    #[error(transparent)]
    Yaml(#[from] crate::rules::yaml::YamlError),
    #[error("containerRuntimeEndpoint is not a string")]
    NotString,
    /// The setting named is there but not an endpoint crictl can use.
    #[error("{0} is not a usable endpoint")]
    Unusable(&'static str),
    #[error("is not UTF-8")]
    NotUtf8,
    #[error(transparent)]
    Flag(#[from] crate::rules::flags::FlagError),
}

/// Pure: `containerRuntimeEndpoint` of a KubeletConfiguration (None when
/// unset or empty).
pub fn parse_kubelet_config(bytes: &[u8]) -> Result<Option<String>, EndpointError> {
    let doc = crate::rules::yaml::parse_value(bytes)?;
    match doc.get("containerRuntimeEndpoint") {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(v) => {
            let s = v.as_str().ok_or(EndpointError::NotString)?;
            let s = s.trim();
            if s.is_empty() {
                Ok(None)
            } else if valid(s) {
                Ok(Some(s.to_string()))
            } else {
                Err(EndpointError::Unusable("containerRuntimeEndpoint"))
            }
        }
    }
}

/// Pure: `--container-runtime-endpoint` in kubeadm-flags.env's
/// `KUBELET_KUBEADM_ARGS="..."` (a systemd environment file whose value the
/// kubelet unit expands unquoted, so it is split on whitespace), read as
/// pflag reads it (the last occurrence wins).
pub fn parse_kubeadm_flags(bytes: &[u8]) -> Result<Option<String>, EndpointError> {
    let text = std::str::from_utf8(bytes).map_err(|_| EndpointError::NotUtf8)?;
    let mut found = None;
    for line in text.lines() {
        let Some(value) = line.trim().strip_prefix("KUBELET_KUBEADM_ARGS=") else {
            continue;
        };
        let value = value.trim();
        let value = value
            .strip_prefix('"')
            .and_then(|v| v.strip_suffix('"'))
            .or_else(|| value.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')))
            .unwrap_or(value);
        let argv: Vec<&str> = value.split_whitespace().collect();
        let flags = crate::rules::flags::parse(
            &argv,
            crate::rules::flags::Syntax::Pflag,
            &["container-runtime-endpoint"],
        )?;
        if let Some(e) = flags.get("container-runtime-endpoint") {
            found = Some(e.clone());
        }
    }
    match found {
        Some(e) if e.is_empty() => Ok(None),
        Some(e) if valid(&e) => Ok(Some(e)),
        Some(_) => Err(EndpointError::Unusable("--container-runtime-endpoint")),
        None => Ok(None),
    }
}

/// Resolve the endpoint for this node (under `root`).
pub fn resolve(root: &Root, flag: Option<&str>) -> RuntimeEndpoint {
    if let Some(e) = flag {
        return RuntimeEndpoint {
            endpoint: Some(e.to_string()),
            source: Source::Flag,
            warning: None,
        };
    }
    let mut warnings = Vec::new();
    for (rel, source, parse) in [
        (
            KUBEADM_FLAGS,
            Source::KubeadmFlags,
            parse_kubeadm_flags as fn(&[u8]) -> Result<Option<String>, EndpointError>,
        ),
        (KUBELET_CONFIG, Source::KubeletConfig, parse_kubelet_config),
    ] {
        match root.read_file(rel, SMALL_FILE_MAX, Trust::TypeOnly) {
            Ok(None) => {}
            Ok(Some(bytes)) => match parse(&bytes) {
                Ok(Some(e)) => {
                    return RuntimeEndpoint {
                        endpoint: Some(e),
                        source,
                        warning: (!warnings.is_empty()).then(|| warnings.join("; ")),
                    }
                }
                Ok(None) => {}
                Err(e) => warnings.push(format!("{}: {e}", crate::node::paths::node(rel))),
            },
            Err(e) => warnings.push(e.to_string()),
        }
    }
    RuntimeEndpoint {
        endpoint: None,
        source: Source::Crictl,
        warning: (!warnings.is_empty()).then(|| warnings.join("; ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubelet_config_endpoint() {
        let c = b"apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncontainerRuntimeEndpoint: unix:///run/k3s/containerd/containerd.sock\n";
        assert_eq!(
            parse_kubelet_config(c),
            Ok(Some("unix:///run/k3s/containerd/containerd.sock".into()))
        );
        assert_eq!(
            parse_kubelet_config(b"kind: KubeletConfiguration\n"),
            Ok(None)
        );
        assert_eq!(
            parse_kubelet_config(b"containerRuntimeEndpoint: \"\"\n"),
            Ok(None)
        );
        assert!(parse_kubelet_config(b"containerRuntimeEndpoint: [a]\n").is_err());
        assert!(parse_kubelet_config(b"containerRuntimeEndpoint: \"a b\"\n").is_err());
        assert!(parse_kubelet_config(b": : :").is_err());
    }

    #[test]
    fn kubeadm_flags_endpoint_as_pflag_reads_it() {
        let f = b"KUBELET_KUBEADM_ARGS=\"--container-runtime-endpoint=unix:///var/run/crio/crio.sock --pod-infra-container-image=registry.k8s.io/pause:3.10\"\n";
        assert_eq!(
            parse_kubeadm_flags(f),
            Ok(Some("unix:///var/run/crio/crio.sock".into()))
        );
        let two = b"KUBELET_KUBEADM_ARGS=\"--node-ip 10.0.0.1 --container-runtime-endpoint unix:///a.sock --container-runtime-endpoint=unix:///b.sock\"\n";
        assert_eq!(parse_kubeadm_flags(two), Ok(Some("unix:///b.sock".into())));
        assert_eq!(
            parse_kubeadm_flags(b"KUBELET_KUBEADM_ARGS=\"--v=2\"\n"),
            Ok(None)
        );
        assert_eq!(parse_kubeadm_flags(b"# nothing\n"), Ok(None));
        assert!(parse_kubeadm_flags(b"\xff").is_err());
    }
}
