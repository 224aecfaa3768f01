//! PKI reading (pure, on bytes): PEM/DER certificates, the client certificate
//! embedded in a kubeconfig, signature chain to a CA, key/certificate match,
//! sha256 fingerprints, and the fixed list of leaves and CAs of SPEC section 2.
//! File I/O lives elsewhere (`node_pki`). Never puts key material in an error.

use std::net::{Ipv4Addr, Ipv6Addr};

use base64::Engine as _;
use serde::Deserialize;
use time::OffsetDateTime;
use x509_parser::asn1_rs::{Any, Class, FromDer, Tag};
use x509_parser::certificate::X509Certificate;
use x509_parser::extensions::GeneralName;
use x509_parser::num_bigint::BigUint;
use x509_parser::pem::Pem;
use x509_parser::public_key::PublicKey;

/// The three CAs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CaId {
    Kubernetes,
    Etcd,
    FrontProxy,
}

impl CaId {
    pub const ALL: [CaId; 3] = [CaId::Kubernetes, CaId::Etcd, CaId::FrontProxy];
    /// The `caSHA256` key, relative to pki/: `ca.crt`, `etcd/ca.crt`, `front-proxy-ca.crt`.
    pub fn key(self) -> &'static str {
        match self {
            CaId::Kubernetes => "ca.crt",
            CaId::Etcd => "etcd/ca.crt",
            CaId::FrontProxy => "front-proxy-ca.crt",
        }
    }
    /// kubeadm's name: `ca`, `etcd-ca`, `front-proxy-ca`.
    pub fn name(self) -> &'static str {
        match self {
            CaId::Kubernetes => "ca",
            CaId::Etcd => "etcd-ca",
            CaId::FrontProxy => "front-proxy-ca",
        }
    }
    /// Node path relative to the root, e.g. `etc/kubernetes/pki/ca.crt`.
    pub fn cert_path(self) -> String {
        format!("etc/kubernetes/pki/{}", self.key())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeafKind {
    /// A PEM file with a `.key` beside it.
    Pem,
    /// A kubeconfig with `client-certificate-data` / `client-key-data`.
    Kubeconfig,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeafSpec {
    /// kubeadm's name: `apiserver`, `etcd-server`, `admin.conf`, ...
    pub name: &'static str,
    /// Node path relative to the root, e.g. `etc/kubernetes/pki/apiserver.crt`.
    pub path: &'static str,
    /// For `Pem`: the private key path; for `Kubeconfig`: same as `path`.
    pub key_path: &'static str,
    pub kind: LeafKind,
    pub ca: CaId,
    /// Only `super-admin.conf` may be missing.
    pub optional: bool,
}

/// Every leaf of SPEC section 2, in a fixed order (PEM leaves first, then the
/// kubeconfigs: admin, super-admin, controller-manager, scheduler).
pub const LEAVES: [LeafSpec; 11] = [
    pem(
        "apiserver",
        "etc/kubernetes/pki/apiserver.crt",
        "etc/kubernetes/pki/apiserver.key",
        CaId::Kubernetes,
    ),
    pem(
        "apiserver-kubelet-client",
        "etc/kubernetes/pki/apiserver-kubelet-client.crt",
        "etc/kubernetes/pki/apiserver-kubelet-client.key",
        CaId::Kubernetes,
    ),
    pem(
        "apiserver-etcd-client",
        "etc/kubernetes/pki/apiserver-etcd-client.crt",
        "etc/kubernetes/pki/apiserver-etcd-client.key",
        CaId::Etcd,
    ),
    pem(
        "front-proxy-client",
        "etc/kubernetes/pki/front-proxy-client.crt",
        "etc/kubernetes/pki/front-proxy-client.key",
        CaId::FrontProxy,
    ),
    pem(
        "etcd-server",
        "etc/kubernetes/pki/etcd/server.crt",
        "etc/kubernetes/pki/etcd/server.key",
        CaId::Etcd,
    ),
    pem(
        "etcd-peer",
        "etc/kubernetes/pki/etcd/peer.crt",
        "etc/kubernetes/pki/etcd/peer.key",
        CaId::Etcd,
    ),
    pem(
        "etcd-healthcheck-client",
        "etc/kubernetes/pki/etcd/healthcheck-client.crt",
        "etc/kubernetes/pki/etcd/healthcheck-client.key",
        CaId::Etcd,
    ),
    kubeconfig("admin.conf", "etc/kubernetes/admin.conf", false),
    kubeconfig("super-admin.conf", "etc/kubernetes/super-admin.conf", true),
    kubeconfig(
        "controller-manager.conf",
        "etc/kubernetes/controller-manager.conf",
        false,
    ),
    kubeconfig("scheduler.conf", "etc/kubernetes/scheduler.conf", false),
];

const fn pem(name: &'static str, path: &'static str, key_path: &'static str, ca: CaId) -> LeafSpec {
    LeafSpec {
        name,
        path,
        key_path,
        kind: LeafKind::Pem,
        ca,
        optional: false,
    }
}

const fn kubeconfig(name: &'static str, path: &'static str, optional: bool) -> LeafSpec {
    LeafSpec {
        name,
        path,
        key_path: path,
        kind: LeafKind::Kubeconfig,
        ca: CaId::Kubernetes,
        optional,
    }
}

/// A parsed X.509 certificate: what the runbook reports and checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedCert {
    pub der: Vec<u8>,
    /// RFC 4514-ish, e.g. `CN=kube-apiserver`.
    pub subject: String,
    pub issuer: String,
    pub not_before: OffsetDateTime,
    pub not_after: OffsetDateTime,
    /// lowercase hex
    pub serial: String,
    /// `rsa`, `ecdsa`, or another short name.
    pub key_algorithm: String,
    pub is_ca: bool,
    pub dns_names: Vec<String>,
    pub ip_addresses: Vec<String>,
    /// Key usages and extended key usages, in a fixed order, by their
    /// RFC 5280 names (`digitalSignature`, `keyEncipherment`,
    /// `serverAuth`, `clientAuth`; another extended usage by its OID).
    pub usages: Vec<String>,
}

/// Errors never contain key material.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PkiError {
    #[error("no PEM CERTIFICATE block found")]
    NoCertificate,
    #[error("certificate does not parse: {0}")]
    BadCertificate(String),
    #[error("kubeconfig does not parse: {0}")]
    BadKubeconfig(String),
    #[error("private key does not parse: {0}")]
    BadKey(String),
}

/// The first `CERTIFICATE` block of a PEM file.
///
/// Blocks with other labels before it (a key, EC parameters) are skipped; a
/// malformed PEM block before the first certificate is an error.
pub fn parse_pem_certificate(bytes: &[u8]) -> Result<ParsedCert, PkiError> {
    for block in Pem::iter_from_buffer(bytes) {
        let Ok(block) = block else {
            return Err(PkiError::BadCertificate("malformed PEM block".into()));
        };
        if block.label == "CERTIFICATE" {
            return parse_der_certificate(&block.contents);
        }
    }
    Err(PkiError::NoCertificate)
}

/// The notAfter of a DER certificate, when it parses.
pub fn parse_der_not_after(der: &[u8]) -> Option<OffsetDateTime> {
    let (_, cert) = X509Certificate::from_der(der).ok()?;
    Some(cert.validity().not_after.to_datetime())
}

/// One DER-encoded certificate (and nothing after it).
pub fn parse_der_certificate(der: &[u8]) -> Result<ParsedCert, PkiError> {
    let (rest, cert) = X509Certificate::from_der(der).map_err(x509_error)?;
    if !rest.is_empty() {
        return Err(PkiError::BadCertificate(
            "trailing data after the certificate".into(),
        ));
    }
    let used = &der[..der.len() - rest.len()];

    let mut dns_names = Vec::new();
    let mut ip_addresses = Vec::new();
    let san = cert
        .subject_alternative_name()
        .map_err(|_| PkiError::BadCertificate("invalid subjectAltName extension".into()))?;
    if let Some(san) = san {
        for name in &san.value.general_names {
            match name {
                GeneralName::DNSName(d) => dns_names.push((*d).to_string()),
                GeneralName::IPAddress(b) => {
                    if let Some(ip) = ip_text(b) {
                        ip_addresses.push(ip);
                    }
                }
                _ => {}
            }
        }
    }

    let usages = usages_of(&cert)?;
    let validity = cert.validity();
    Ok(ParsedCert {
        der: used.to_vec(),
        subject: cert.subject().to_string(),
        issuer: cert.issuer().to_string(),
        not_before: validity.not_before.to_datetime(),
        not_after: validity.not_after.to_datetime(),
        serial: serial_hex(cert.raw_serial()),
        key_algorithm: key_algorithm_name(&cert.public_key().algorithm.algorithm.to_id_string()),
        is_ca: cert.is_ca(),
        dns_names,
        ip_addresses,
        usages,
    })
}

/// The key usages, then the extended key usages, by their RFC 5280 names.
fn usages_of(cert: &X509Certificate<'_>) -> Result<Vec<String>, PkiError> {
    let mut out = Vec::new();
    let bad = |what: &str| PkiError::BadCertificate(format!("invalid {what} extension"));
    if let Some(ku) = cert.key_usage().map_err(|_| bad("keyUsage"))? {
        let ku = ku.value;
        for (set, name) in [
            (ku.digital_signature(), "digitalSignature"),
            (ku.non_repudiation(), "contentCommitment"),
            (ku.key_encipherment(), "keyEncipherment"),
            (ku.data_encipherment(), "dataEncipherment"),
            (ku.key_agreement(), "keyAgreement"),
            (ku.key_cert_sign(), "keyCertSign"),
            (ku.crl_sign(), "cRLSign"),
            (ku.encipher_only(), "encipherOnly"),
            (ku.decipher_only(), "decipherOnly"),
        ] {
            if set {
                out.push(name.to_string());
            }
        }
    }
    if let Some(eku) = cert
        .extended_key_usage()
        .map_err(|_| bad("extendedKeyUsage"))?
    {
        let eku = eku.value;
        for (set, name) in [
            (eku.any, "anyExtendedKeyUsage"),
            (eku.server_auth, "serverAuth"),
            (eku.client_auth, "clientAuth"),
            (eku.code_signing, "codeSigning"),
            (eku.email_protection, "emailProtection"),
            (eku.time_stamping, "timeStamping"),
            (eku.ocsp_signing, "OCSPSigning"),
        ] {
            if set {
                out.push(name.to_string());
            }
        }
        out.extend(eku.other.iter().map(|o| o.to_id_string()));
    }
    Ok(out)
}

fn x509_error(e: x509_parser::nom::Err<x509_parser::error::X509Error>) -> PkiError {
    match e {
        x509_parser::nom::Err::Incomplete(_) => {
            PkiError::BadCertificate("truncated certificate".into())
        }
        x509_parser::nom::Err::Error(e) | x509_parser::nom::Err::Failure(e) => {
            PkiError::BadCertificate(e.to_string())
        }
    }
}

/// Lowercase hex of the serial's bytes, without DER's sign padding.
fn serial_hex(raw: &[u8]) -> String {
    let mut s = raw;
    while s.len() > 1 && s[0] == 0 {
        s = &s[1..];
    }
    s.iter().map(|b| format!("{b:02x}")).collect()
}

fn ip_text(b: &[u8]) -> Option<String> {
    if let Ok(v4) = <[u8; 4]>::try_from(b) {
        Some(Ipv4Addr::from(v4).to_string())
    } else if let Ok(v6) = <[u8; 16]>::try_from(b) {
        Some(Ipv6Addr::from(v6).to_string())
    } else {
        None
    }
}

const OID_RSA_ENCRYPTION: &str = "1.2.840.113549.1.1.1";
const OID_RSASSA_PSS: &str = "1.2.840.113549.1.1.10";
const OID_EC_PUBLIC_KEY: &str = "1.2.840.10045.2.1";
const OID_ED25519: &str = "1.3.101.112";
const OID_ED448: &str = "1.3.101.113";
const OID_DSA: &str = "1.2.840.10040.4.1";

fn key_algorithm_name(oid: &str) -> String {
    match oid {
        OID_RSA_ENCRYPTION => "rsa".into(),
        OID_RSASSA_PSS => "rsa-pss".into(),
        OID_EC_PUBLIC_KEY => "ecdsa".into(),
        OID_ED25519 => "ed25519".into(),
        OID_ED448 => "ed448".into(),
        OID_DSA => "dsa".into(),
        other => other.to_string(),
    }
}

/// Where a kubeconfig keeps the client certificate of its current context's user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KubeconfigCert {
    /// `client-certificate-data`, decoded (PEM bytes).
    Embedded(Vec<u8>),
    /// `client-certificate: <path>` (not how kubeadm writes these four).
    File(String),
}

// The parts of a kubeconfig (client-go's clientcmd/api/v1 shape) this module
// reads; everything else is ignored. No Debug derives: `KcUser` holds key data.
#[derive(Deserialize)]
struct KcFile {
    #[serde(rename = "current-context", default)]
    current_context: Option<String>,
    #[serde(default)]
    contexts: Option<Vec<KcNamedContext>>,
    #[serde(default)]
    users: Option<Vec<KcNamedUser>>,
}

#[derive(Deserialize)]
struct KcNamedContext {
    name: String,
    #[serde(default)]
    context: Option<KcContext>,
}

#[derive(Deserialize)]
struct KcContext {
    #[serde(default)]
    user: Option<String>,
}

#[derive(Deserialize)]
struct KcNamedUser {
    name: String,
    #[serde(default)]
    user: Option<KcUser>,
}

#[derive(Deserialize)]
struct KcUser {
    #[serde(rename = "client-certificate-data", default)]
    cert_data: Option<String>,
    #[serde(rename = "client-certificate", default)]
    cert_file: Option<String>,
    #[serde(rename = "client-key-data", default)]
    key_data: Option<String>,
    #[serde(rename = "client-key", default)]
    key_file: Option<String>,
}

/// Every value the kubeconfig's shape reads is a string: a name such as
/// `1` or `true` is its text, as a typed YAML reader (and kubectl) reads it.
fn scalars_as_text(v: &mut serde_json::Value) {
    use serde_json::Value;
    match v {
        Value::Number(n) => *v = Value::String(n.to_string()),
        Value::Bool(b) => *v = Value::String(b.to_string()),
        Value::Array(a) => a.iter_mut().for_each(scalars_as_text),
        Value::Object(o) => o.values_mut().for_each(scalars_as_text),
        Value::Null | Value::String(_) => {}
    }
}

fn bad_kubeconfig(msg: impl Into<String>) -> PkiError {
    PkiError::BadKubeconfig(msg.into())
}

/// A name from a kubeconfig, fit for an error message: quoted, short,
/// printable ASCII only.
fn shown(name: &str) -> String {
    if name.len() <= 100 && name.chars().all(|c| c.is_ascii_graphic() || c == ' ') {
        format!("{name:?}")
    } else {
        "(unprintable name)".into()
    }
}

fn nonempty(v: Option<String>) -> Option<String> {
    v.filter(|s| !s.trim().is_empty())
}

/// The user entry of the current context (or the only user), with its name.
fn kubeconfig_user(yaml: &[u8]) -> Result<(String, KcUser), PkiError> {
    // Within the YAML bounds (SPEC 10); the error says where the YAML went
    // wrong or which bound it is over, never the value (it may be key data).
    let mut doc = crate::rules::yaml::parse_value(yaml).map_err(|e| match e {
        crate::rules::yaml::YamlError::Bound(_) => bad_kubeconfig(e.to_string()),
        crate::rules::yaml::YamlError::Syntax(s) => {
            bad_kubeconfig(format!("not a kubeconfig ({s})"))
        }
    })?;
    scalars_as_text(&mut doc);
    let kc: KcFile = serde_json::from_value(doc)
        .map_err(|_| bad_kubeconfig("not a kubeconfig (it is not of the kubeconfig's shape)"))?;
    let users = kc.users.unwrap_or_default();
    let user = match nonempty(kc.current_context) {
        Some(cc) => {
            let contexts = kc.contexts.unwrap_or_default();
            let ctx = contexts.iter().find(|c| c.name == cc).ok_or_else(|| {
                bad_kubeconfig(format!(
                    "current-context {} is not among the contexts",
                    shown(&cc)
                ))
            })?;
            let user_name = nonempty(ctx.context.as_ref().and_then(|c| c.user.clone()))
                .ok_or_else(|| bad_kubeconfig(format!("context {} names no user", shown(&cc))))?;
            users
                .into_iter()
                .find(|u| u.name == user_name)
                .ok_or_else(|| {
                    bad_kubeconfig(format!(
                        "user {} of context {} is not among the users",
                        shown(&user_name),
                        shown(&cc)
                    ))
                })?
        }
        None if users.len() == 1 => users.into_iter().next().expect("one user"),
        None => {
            return Err(bad_kubeconfig(format!(
                "no current-context, and {} users instead of exactly one",
                users.len()
            )))
        }
    };
    let name = user.name;
    let body = user
        .user
        .ok_or_else(|| bad_kubeconfig(format!("user {} has no credentials", shown(&name))))?;
    Ok((name, body))
}

fn decode_data(field: &str, data: &str) -> Result<Vec<u8>, PkiError> {
    let compact: Vec<u8> = data.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    // The decoder's own error names the offending byte: never show it.
    base64::engine::general_purpose::STANDARD
        .decode(compact)
        .map_err(|_| bad_kubeconfig(format!("{field} is not valid base64")))
}

/// The client certificate of the kubeconfig's current-context user (or of
/// its only user when there is no current-context).
pub fn kubeconfig_client_cert(yaml: &[u8]) -> Result<KubeconfigCert, PkiError> {
    let (name, user) = kubeconfig_user(yaml)?;
    match (nonempty(user.cert_data), nonempty(user.cert_file)) {
        (Some(data), None) => Ok(KubeconfigCert::Embedded(decode_data(
            "client-certificate-data",
            &data,
        )?)),
        (None, Some(path)) => Ok(KubeconfigCert::File(path)),
        (Some(_), Some(_)) => Err(bad_kubeconfig(format!(
            "user {} has both client-certificate-data and client-certificate",
            shown(&name)
        ))),
        (None, None) => Err(bad_kubeconfig(format!(
            "user {} has no client certificate",
            shown(&name)
        ))),
    }
}

/// The client key (`client-key-data`, decoded PEM) of the same user; None when
/// the kubeconfig names a key file instead.
pub fn kubeconfig_client_key(yaml: &[u8]) -> Result<Option<Vec<u8>>, PkiError> {
    let (name, user) = kubeconfig_user(yaml)?;
    match (nonempty(user.key_data), nonempty(user.key_file)) {
        (Some(data), None) => Ok(Some(decode_data("client-key-data", &data)?)),
        (None, Some(_)) => Ok(None),
        (Some(_), Some(_)) => Err(bad_kubeconfig(format!(
            "user {} has both client-key-data and client-key",
            shown(&name)
        ))),
        (None, None) => Err(bad_kubeconfig(format!(
            "user {} has no client key",
            shown(&name)
        ))),
    }
}

/// True when `leaf`'s signature verifies with `ca`'s public key (and the
/// issuer names match).
pub fn verify_signed_by(leaf: &ParsedCert, ca: &ParsedCert) -> bool {
    let Ok((_, leaf)) = X509Certificate::from_der(&leaf.der) else {
        return false;
    };
    let Ok((_, ca)) = X509Certificate::from_der(&ca.der) else {
        return false;
    };
    // Byte-equal names are the normal case (kubeadm signs both); equal text
    // tolerates a re-encoded CA name. The signature decides either way.
    let names_match = leaf.issuer().as_raw() == ca.subject().as_raw()
        || leaf.issuer().to_string() == ca.subject().to_string();
    names_match && leaf.verify_signature(Some(ca.public_key())).is_ok()
}

/// The public half of a private key, as read from (and checked against) the
/// private key structure. Holds no private material.
enum KeyPublic {
    Rsa {
        n: Vec<u8>,
        e: Vec<u8>,
    },
    Ec {
        curve: Option<String>,
        point: Vec<u8>,
    },
}

fn bad_key(msg: &str) -> PkiError {
    PkiError::BadKey(msg.into())
}

/// True when the PEM private key (PKCS#1 RSA, SEC1 EC, or PKCS#8 of either)
/// belongs to the certificate's public key.
///
/// RSA: the key's modulus and exponent equal the certificate's, and the
/// modulus is the product of the key's two primes. EC: the key's public
/// point (SEC1 carries it; a key without it is an error) and curve equal the
/// certificate's. A key of another algorithm than the certificate's does not
/// match (false, not an error).
pub fn key_matches_cert(cert: &ParsedCert, key_pem: &[u8]) -> Result<bool, PkiError> {
    let key = private_key_public_part(key_pem)?;
    let (_, x509) = X509Certificate::from_der(&cert.der).map_err(x509_error)?;
    let spki = x509.public_key();
    let Ok(public) = spki.parsed() else {
        return Err(PkiError::BadCertificate(
            "certificate public key does not parse".into(),
        ));
    };
    Ok(match (key, public) {
        (KeyPublic::Rsa { n, e }, PublicKey::RSA(rsa)) => {
            unsigned(&n) == unsigned(rsa.modulus) && unsigned(&e) == unsigned(rsa.exponent)
        }
        (KeyPublic::Ec { curve, point }, PublicKey::EC(cert_point)) => {
            let cert_curve = spki
                .algorithm
                .parameters
                .as_ref()
                .and_then(|p| p.as_oid().ok())
                .map(|o| o.to_id_string());
            let curves_agree = match (&curve, &cert_curve) {
                (Some(a), Some(b)) => a == b,
                _ => true,
            };
            curves_agree && ec_points_equal(&point, cert_point.data())
        }
        _ => false,
    })
}

/// The first private key block of a PEM file, reduced to its public half.
/// The decoded key bytes never leave this function.
fn private_key_public_part(pem: &[u8]) -> Result<KeyPublic, PkiError> {
    for block in Pem::iter_from_buffer(pem) {
        let Ok(block) = block else {
            return Err(bad_key("malformed (or legacy-encrypted) PEM block"));
        };
        return match block.label.as_str() {
            "RSA PRIVATE KEY" => rsa_from_pkcs1(&block.contents),
            "EC PRIVATE KEY" => ec_from_sec1(&block.contents, None, None),
            "PRIVATE KEY" => key_from_pkcs8(&block.contents),
            "ENCRYPTED PRIVATE KEY" => Err(bad_key("encrypted private keys are not supported")),
            // e.g. the EC PARAMETERS block `openssl ecparam -genkey` writes first
            _ => continue,
        };
    }
    Err(bad_key(
        "no private key PEM block found (RSA, EC or PKCS#8)",
    ))
}

/// The elements of the single DER SEQUENCE that is all of `der`.
fn der_sequence(der: &[u8]) -> Option<Vec<Any<'_>>> {
    let (rest, seq) = Any::from_der(der).ok()?;
    if !rest.is_empty() || seq.header.tag() != Tag::Sequence || !seq.header.is_constructed() {
        return None;
    }
    der_elements(seq.data)
}

/// All DER elements of `content`, in order.
fn der_elements(mut content: &[u8]) -> Option<Vec<Any<'_>>> {
    let mut out = Vec::new();
    while !content.is_empty() {
        let (rest, any) = Any::from_der(content).ok()?;
        out.push(any);
        content = rest;
    }
    Some(out)
}

fn is_universal(any: &Any, tag: Tag) -> bool {
    any.header.class() == Class::Universal && any.header.tag() == tag
}

fn is_context(any: &Any, tag: u32) -> bool {
    any.header.class() == Class::ContextSpecific && any.header.tag() == Tag(tag)
}

/// A non-negative DER INTEGER's magnitude, or None.
fn der_uint<'a>(any: &Any<'a>) -> Option<&'a [u8]> {
    if !is_universal(any, Tag::Integer) || any.data.is_empty() || any.data[0] & 0x80 != 0 {
        return None;
    }
    Some(unsigned(any.data))
}

/// Big-endian bytes without leading zeros.
fn unsigned(b: &[u8]) -> &[u8] {
    let first = b.iter().position(|&x| x != 0).unwrap_or(b.len());
    &b[first..]
}

fn der_oid(any: &Any) -> Option<String> {
    if !is_universal(any, Tag::Oid) {
        return None;
    }
    any.clone().oid().ok().map(|o| o.to_id_string())
}

/// PKCS#1 RSAPrivateKey: version, n, e, d, p, q, dP, dQ, qInv (, otherPrimes).
fn rsa_from_pkcs1(der: &[u8]) -> Result<KeyPublic, PkiError> {
    let not_pkcs1 = || bad_key("RSA key is not a PKCS#1 RSAPrivateKey");
    let items = der_sequence(der).ok_or_else(not_pkcs1)?;
    if items.len() < 9 {
        return Err(not_pkcs1());
    }
    let ints = items[..9]
        .iter()
        .map(der_uint)
        .collect::<Option<Vec<_>>>()
        .ok_or_else(not_pkcs1)?;
    let (version, n, e, p, q) = (ints[0], ints[1], ints[2], ints[4], ints[5]);
    match version {
        // two primes: n must be p*q, or the file is not one key
        [] => {
            if n.is_empty() || e.is_empty() || p.is_empty() || q.is_empty() {
                return Err(not_pkcs1());
            }
            let product = BigUint::from_bytes_be(p) * BigUint::from_bytes_be(q);
            if product != BigUint::from_bytes_be(n) {
                return Err(bad_key("RSA key components are inconsistent"));
            }
        }
        // multi-prime: n is the product of more primes; compare n and e only
        [1] if items.len() == 10 => {}
        _ => return Err(bad_key("unsupported PKCS#1 RSAPrivateKey version")),
    }
    if n.is_empty() || e.is_empty() {
        return Err(not_pkcs1());
    }
    Ok(KeyPublic::Rsa {
        n: n.to_vec(),
        e: e.to_vec(),
    })
}

/// SEC1 ECPrivateKey: version 1, privateKey OCTET STRING, [0] curve OID
/// OPTIONAL, [1] public key BIT STRING OPTIONAL. `outer_curve` and
/// `outer_point` come from a PKCS#8 wrapper, when there is one.
fn ec_from_sec1(
    der: &[u8],
    outer_curve: Option<String>,
    outer_point: Option<Vec<u8>>,
) -> Result<KeyPublic, PkiError> {
    let not_sec1 = || bad_key("EC key is not a SEC1 ECPrivateKey");
    let items = der_sequence(der).ok_or_else(not_sec1)?;
    if items.len() < 2 || der_uint(&items[0]) != Some(&[1][..]) {
        return Err(not_sec1());
    }
    if !is_universal(&items[1], Tag::OctetString) || items[1].data.is_empty() {
        return Err(not_sec1());
    }
    let mut curve = None;
    let mut point = None;
    for item in &items[2..] {
        if is_context(item, 0) {
            let (_, inner) = Any::from_der(item.data).map_err(|_| not_sec1())?;
            curve = Some(der_oid(&inner).ok_or_else(not_sec1)?);
        } else if is_context(item, 1) {
            let (_, inner) = Any::from_der(item.data).map_err(|_| not_sec1())?;
            if !is_universal(&inner, Tag::BitString) {
                return Err(not_sec1());
            }
            point = Some(bit_string_bytes(inner.data).ok_or_else(not_sec1)?.to_vec());
        } else {
            return Err(not_sec1());
        }
    }
    let curve = match (curve, outer_curve) {
        (Some(a), Some(b)) if a != b => return Err(bad_key("EC key names two different curves")),
        (a, b) => a.or(b),
    };
    let point = point
        .or(outer_point)
        .ok_or_else(|| bad_key("EC key without public key"))?;
    Ok(KeyPublic::Ec { curve, point })
}

/// The bytes of a BIT STRING's content with no unused bits.
fn bit_string_bytes(content: &[u8]) -> Option<&[u8]> {
    match content.split_first() {
        Some((0, rest)) if !rest.is_empty() => Some(rest),
        _ => None,
    }
}

/// PKCS#8 PrivateKeyInfo / OneAsymmetricKey: version, AlgorithmIdentifier,
/// privateKey OCTET STRING, [0] attributes OPTIONAL, [1] publicKey OPTIONAL.
fn key_from_pkcs8(der: &[u8]) -> Result<KeyPublic, PkiError> {
    let not_pkcs8 = || bad_key("key is not a PKCS#8 PrivateKeyInfo");
    let items = der_sequence(der).ok_or_else(not_pkcs8)?;
    if items.len() < 3 {
        return Err(not_pkcs8());
    }
    match der_uint(&items[0]) {
        Some([] | [1]) => {}
        _ => return Err(not_pkcs8()),
    }
    if !is_universal(&items[1], Tag::Sequence) || !is_universal(&items[2], Tag::OctetString) {
        return Err(not_pkcs8());
    }
    let alg = der_elements(items[1].data).ok_or_else(not_pkcs8)?;
    let oid = alg.first().and_then(der_oid).ok_or_else(not_pkcs8)?;
    let mut outer_point = None;
    for item in &items[3..] {
        if is_context(item, 1) {
            outer_point = Some(bit_string_bytes(item.data).ok_or_else(not_pkcs8)?.to_vec());
        } else if !is_context(item, 0) {
            return Err(not_pkcs8());
        }
    }
    match oid.as_str() {
        OID_RSA_ENCRYPTION => rsa_from_pkcs1(items[2].data),
        OID_EC_PUBLIC_KEY => {
            let curve = alg.get(1).and_then(der_oid);
            ec_from_sec1(items[2].data, curve, outer_point)
        }
        other => Err(PkiError::BadKey(format!(
            "unsupported private key algorithm {} (only RSA and ECDSA)",
            key_algorithm_name(other)
        ))),
    }
}

/// Equal EC points, also when one is in compressed form (02/03 || x) and the
/// other uncompressed (04 || x || y).
fn ec_points_equal(a: &[u8], b: &[u8]) -> bool {
    if a == b {
        return true;
    }
    let (short, long) = if a.len() < b.len() { (a, b) } else { (b, a) };
    match (short.split_first(), long.split_first()) {
        (Some((&tag_c, xc)), Some((&4, xy)))
            if (tag_c == 2 || tag_c == 3) && xy.len() == 2 * xc.len() && !xc.is_empty() =>
        {
            let (x, y) = xy.split_at(xc.len());
            let y_odd = y.last().is_some_and(|v| v & 1 == 1);
            x == xc && y_odd == (tag_c == 3)
        }
        _ => false,
    }
}

/// sha256 as 64 lowercase hex digits.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    let d = Sha256::digest(bytes);
    d.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
#[allow(clippy::disallowed_methods, clippy::print_stderr)] // tests read fixture files directly
mod tests {
    use super::*;
    use base64::engine::general_purpose::STANDARD as B64;
    use time::macros::datetime;

    const TREES: [&str; 2] = ["rsa", "ecdsa"];

    fn fixture(rel: &str) -> Vec<u8> {
        let path = format!("{}/fixtures/{rel}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    fn node(tree: &str, rel: &str) -> Vec<u8> {
        fixture(&format!("nodes/{tree}/{rel}"))
    }

    fn ca(tree: &str, id: CaId) -> ParsedCert {
        parse_pem_certificate(&node(tree, &id.cert_path())).unwrap()
    }

    fn pem_cert(tree: &str, rel: &str) -> ParsedCert {
        parse_pem_certificate(&node(tree, &format!("etc/kubernetes/pki/{rel}"))).unwrap()
    }

    fn pem_key(tree: &str, rel: &str) -> Vec<u8> {
        node(tree, &format!("etc/kubernetes/pki/{rel}"))
    }

    fn leaf_cert(tree: &str, spec: &LeafSpec) -> ParsedCert {
        let bytes = node(tree, spec.path);
        match spec.kind {
            LeafKind::Pem => parse_pem_certificate(&bytes).unwrap(),
            LeafKind::Kubeconfig => match kubeconfig_client_cert(&bytes).unwrap() {
                KubeconfigCert::Embedded(pem) => parse_pem_certificate(&pem).unwrap(),
                KubeconfigCert::File(p) => panic!("{}: unexpected file {p}", spec.name),
            },
        }
    }

    fn leaf_key(tree: &str, spec: &LeafSpec) -> Vec<u8> {
        let bytes = node(tree, spec.key_path);
        match spec.kind {
            LeafKind::Pem => bytes,
            LeafKind::Kubeconfig => kubeconfig_client_key(&bytes).unwrap().unwrap(),
        }
    }

    /// The base64 body of a PEM block, joined (what must never show in an error).
    fn pem_body(pem: &[u8]) -> String {
        String::from_utf8_lossy(pem)
            .lines()
            .filter(|l| !l.starts_with("-----"))
            .collect()
    }

    fn assert_clean_error(err: &PkiError, secrets: &[&[u8]]) {
        let text = err.to_string();
        assert!(
            !text.contains("PRIVATE KEY"),
            "error shows a key header: {text}"
        );
        assert!(text.len() < 512, "error too long: {text}");
        for secret in secrets {
            let body = pem_body(secret);
            for window in body.as_bytes().chunks(16).filter(|c| c.len() == 16) {
                let w = std::str::from_utf8(window).unwrap();
                assert!(!text.contains(w), "error shows key material: {text}");
            }
        }
    }

    // ---------------------------------------------------------- DER builder

    fn der(tag: u8, content: &[u8]) -> Vec<u8> {
        let mut out = vec![tag];
        let len = content.len();
        if len < 0x80 {
            out.push(len as u8);
        } else {
            let bytes: Vec<u8> = len
                .to_be_bytes()
                .iter()
                .copied()
                .skip_while(|&b| b == 0)
                .collect();
            out.push(0x80 | bytes.len() as u8);
            out.extend(bytes);
        }
        out.extend_from_slice(content);
        out
    }

    fn pem_wrap(label: &str, der: &[u8]) -> Vec<u8> {
        let b64 = B64.encode(der);
        let mut s = format!("-----BEGIN {label}-----\n");
        for chunk in b64.as_bytes().chunks(64) {
            s.push_str(std::str::from_utf8(chunk).unwrap());
            s.push('\n');
        }
        s.push_str(&format!("-----END {label}-----\n"));
        s.into_bytes()
    }

    fn pem_der(pem: &[u8]) -> Vec<u8> {
        Pem::iter_from_buffer(pem).next().unwrap().unwrap().contents
    }

    const OID_RSA_DER: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01];
    const OID_EC_DER: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01];
    const OID_P256_DER: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07];

    /// PKCS#8 PrivateKeyInfo around a PKCS#1 or SEC1 key.
    fn to_pkcs8(inner: &[u8], ec: bool) -> Vec<u8> {
        let alg = if ec {
            [der(0x06, OID_EC_DER), der(0x06, OID_P256_DER)].concat()
        } else {
            [der(0x06, OID_RSA_DER), der(0x05, &[])].concat()
        };
        let body = [der(0x02, &[0]), der(0x30, &alg), der(0x04, inner)].concat();
        pem_wrap("PRIVATE KEY", &der(0x30, &body))
    }

    // ---------------------------------------------------------- certificates

    #[test]
    fn apiserver_subject_dates_and_sans() {
        for tree in TREES {
            let c = pem_cert(tree, "apiserver.crt");
            assert_eq!(c.subject, "CN=kube-apiserver");
            assert_eq!(c.issuer, "CN=kubernetes");
            assert_eq!(c.not_before, datetime!(2026-06-01 0:00 UTC));
            assert_eq!(c.not_after, datetime!(2027-06-01 0:00 UTC));
            assert_eq!(
                c.dns_names,
                [
                    "cp-1",
                    "kubernetes",
                    "kubernetes.default",
                    "kubernetes.default.svc",
                    "kubernetes.default.svc.cluster.local"
                ]
            );
            assert_eq!(c.ip_addresses, ["10.96.0.1", "10.0.0.11", "127.0.0.1"]);
            assert_eq!(c.key_algorithm, tree);
            assert!(!c.is_ca);
            assert!(!c.serial.is_empty());
            assert!(c
                .serial
                .chars()
                .all(|ch| ch.is_ascii_digit() || ('a'..='f').contains(&ch)));
            assert!(!c.serial.starts_with("00"));
        }
    }

    #[test]
    fn etcd_server_and_peer() {
        for tree in TREES {
            for name in ["etcd/server.crt", "etcd/peer.crt"] {
                let c = pem_cert(tree, name);
                assert_eq!(c.subject, "CN=cp-1", "{tree} {name}");
                assert_eq!(c.issuer, "CN=etcd-ca");
                assert_eq!(c.dns_names, ["localhost", "cp-1"]);
                assert_eq!(c.ip_addresses, ["10.0.0.11", "127.0.0.1", "::1"]);
                assert_eq!(c.not_before, datetime!(2026-06-01 0:00 UTC));
            }
            let server = pem_cert(tree, "etcd/server.crt");
            let peer = pem_cert(tree, "etcd/peer.crt");
            assert_eq!(server.not_after, datetime!(2027-06-01 0:00 UTC));
            assert_eq!(peer.not_after, datetime!(2027-03-01 0:00 UTC));
            assert_ne!(server.serial, peer.serial);
        }
    }

    #[test]
    fn client_leaves_subjects_and_issuers() {
        for tree in TREES {
            let kubelet = pem_cert(tree, "apiserver-kubelet-client.crt");
            assert_eq!(
                kubelet.subject,
                "O=kubeadm:cluster-admins, CN=kube-apiserver-kubelet-client"
            );
            assert_eq!(kubelet.issuer, "CN=kubernetes");
            assert!(kubelet.dns_names.is_empty() && kubelet.ip_addresses.is_empty());

            let etcd_client = pem_cert(tree, "apiserver-etcd-client.crt");
            assert_eq!(etcd_client.subject, "CN=kube-apiserver-etcd-client");
            assert_eq!(etcd_client.issuer, "CN=etcd-ca");

            let fp = pem_cert(tree, "front-proxy-client.crt");
            assert_eq!(fp.subject, "CN=front-proxy-client");
            assert_eq!(fp.issuer, "CN=front-proxy-ca");

            let hc = pem_cert(tree, "etcd/healthcheck-client.crt");
            assert_eq!(hc.subject, "CN=kube-etcd-healthcheck-client");
            assert_eq!(hc.not_after, datetime!(2027-06-01 0:00 UTC));
        }
    }

    #[test]
    fn kubeconfig_leaves_subjects() {
        let expect = [
            (
                "admin.conf",
                "O=kubeadm:cluster-admins, CN=kubernetes-admin",
            ),
            (
                "super-admin.conf",
                "O=system:masters, CN=kubernetes-super-admin",
            ),
            (
                "controller-manager.conf",
                "CN=system:kube-controller-manager",
            ),
            ("scheduler.conf", "CN=system:kube-scheduler"),
        ];
        for tree in TREES {
            for (name, subject) in expect {
                let spec = LEAVES.iter().find(|l| l.name == name).unwrap();
                let c = leaf_cert(tree, spec);
                assert_eq!(c.subject, subject, "{tree} {name}");
                assert_eq!(c.issuer, "CN=kubernetes");
                assert_eq!(c.not_before, datetime!(2026-06-01 0:00 UTC));
                assert_eq!(c.not_after, datetime!(2027-06-01 0:00 UTC));
                assert_eq!(c.key_algorithm, tree);
            }
        }
    }

    #[test]
    fn cas_are_self_signed_cas() {
        let subjects = [
            (CaId::Kubernetes, "CN=kubernetes"),
            (CaId::Etcd, "CN=etcd-ca"),
            (CaId::FrontProxy, "CN=front-proxy-ca"),
        ];
        for tree in TREES {
            for (id, subject) in subjects {
                let c = ca(tree, id);
                assert!(c.is_ca, "{tree} {id:?}");
                assert_eq!(c.subject, subject);
                assert_eq!(c.issuer, subject);
                assert_eq!(c.not_before, datetime!(2025-01-01 0:00 UTC));
                assert_eq!(c.not_after, datetime!(2035-01-01 0:00 UTC));
                assert!(verify_signed_by(&c, &c));
                assert_eq!(sha256_hex(&node(tree, &id.cert_path())).len(), 64);
            }
        }
    }

    #[test]
    fn every_leaf_parses_chains_to_its_ca_and_matches_its_key() {
        for tree in TREES {
            for spec in &LEAVES {
                let cert = leaf_cert(tree, spec);
                assert!(!cert.is_ca, "{tree} {}", spec.name);
                for id in CaId::ALL {
                    assert_eq!(
                        verify_signed_by(&cert, &ca(tree, id)),
                        id == spec.ca,
                        "{tree} {} against {id:?}",
                        spec.name
                    );
                }
                let other_tree = if tree == "rsa" { "ecdsa" } else { "rsa" };
                assert!(!verify_signed_by(&cert, &ca(other_tree, spec.ca)));
                let key = leaf_key(tree, spec);
                assert_eq!(
                    key_matches_cert(&cert, &key),
                    Ok(true),
                    "{tree} {}",
                    spec.name
                );
            }
        }
    }

    #[test]
    fn every_leaf_key_is_distinct() {
        for tree in TREES {
            let certs: Vec<_> = LEAVES.iter().map(|s| leaf_cert(tree, s)).collect();
            for (i, spec) in LEAVES.iter().enumerate() {
                let key = leaf_key(tree, spec);
                for (j, cert) in certs.iter().enumerate() {
                    assert_eq!(
                        key_matches_cert(cert, &key),
                        Ok(i == j),
                        "{tree}: key of {} vs cert of {}",
                        spec.name,
                        LEAVES[j].name
                    );
                }
            }
        }
    }

    #[test]
    fn keys_do_not_match_across_algorithms() {
        let rsa_cert = pem_cert("rsa", "apiserver.crt");
        let ec_cert = pem_cert("ecdsa", "apiserver.crt");
        assert_eq!(
            key_matches_cert(&rsa_cert, &pem_key("ecdsa", "apiserver.key")),
            Ok(false)
        );
        assert_eq!(
            key_matches_cert(&ec_cert, &pem_key("rsa", "apiserver.key")),
            Ok(false)
        );
        // a CA key does not match the leaf it signed
        assert_eq!(
            key_matches_cert(&rsa_cert, &pem_key("rsa", "ca.key")),
            Ok(false)
        );
        assert_eq!(
            key_matches_cert(&ec_cert, &pem_key("ecdsa", "ca.key")),
            Ok(false)
        );
    }

    #[test]
    fn foreign_leaf_does_not_verify() {
        let foreign = parse_pem_certificate(&fixture("pki-extra/apiserver-foreign.crt")).unwrap();
        let foreign_ca = parse_pem_certificate(&fixture("pki-extra/foreign-ca.crt")).unwrap();
        // same names as the genuine leaf: only the signature tells them apart
        assert_eq!(foreign.subject, "CN=kube-apiserver");
        assert_eq!(foreign.issuer, "CN=kubernetes");
        assert!(verify_signed_by(&foreign, &foreign_ca));
        for tree in TREES {
            assert!(!verify_signed_by(&foreign, &ca(tree, CaId::Kubernetes)));
            let genuine = pem_cert(tree, "apiserver.crt");
            assert!(!verify_signed_by(&genuine, &foreign_ca));
        }
        let key = fixture("pki-extra/apiserver-foreign.key");
        assert_eq!(key_matches_cert(&foreign, &key), Ok(true));
        assert_eq!(
            key_matches_cert(&pem_cert("rsa", "apiserver.crt"), &key),
            Ok(false)
        );
    }

    #[test]
    fn not_yet_valid_leaf_parses_and_chains() {
        let c = parse_pem_certificate(&fixture("pki-extra/apiserver-not-yet-valid.crt")).unwrap();
        assert_eq!(c.not_before, datetime!(2030-01-01 0:00 UTC));
        assert_eq!(c.not_after, datetime!(2031-01-01 0:00 UTC));
        assert!(verify_signed_by(&c, &ca("rsa", CaId::Kubernetes)));
        assert!(!verify_signed_by(&c, &ca("ecdsa", CaId::Kubernetes)));
        let key = fixture("pki-extra/apiserver-not-yet-valid.key");
        assert_eq!(key_matches_cert(&c, &key), Ok(true));
    }

    #[test]
    fn pkcs8_keys_from_fixtures() {
        let rsa8 = fixture("pki-extra/rsa-apiserver.pkcs8.key");
        let ec8 = fixture("pki-extra/ecdsa-apiserver.pkcs8.key");
        let rsa_api = pem_cert("rsa", "apiserver.crt");
        let ec_api = pem_cert("ecdsa", "apiserver.crt");
        assert_eq!(key_matches_cert(&rsa_api, &rsa8), Ok(true));
        assert_eq!(key_matches_cert(&ec_api, &ec8), Ok(true));
        assert_eq!(key_matches_cert(&ec_api, &rsa8), Ok(false));
        assert_eq!(key_matches_cert(&rsa_api, &ec8), Ok(false));
        let rsa_kubelet = pem_cert("rsa", "apiserver-kubelet-client.crt");
        let ec_kubelet = pem_cert("ecdsa", "apiserver-kubelet-client.crt");
        assert_eq!(key_matches_cert(&rsa_kubelet, &rsa8), Ok(false));
        assert_eq!(key_matches_cert(&ec_kubelet, &ec8), Ok(false));
    }

    #[test]
    fn pkcs8_keys_built_in_test() {
        for tree in TREES {
            let ec = tree == "ecdsa";
            let inner = pem_der(&pem_key(tree, "etcd/server.key"));
            let pkcs8 = to_pkcs8(&inner, ec);
            let server = pem_cert(tree, "etcd/server.crt");
            let peer = pem_cert(tree, "etcd/peer.crt");
            assert_eq!(key_matches_cert(&server, &pkcs8), Ok(true), "{tree}");
            assert_eq!(key_matches_cert(&peer, &pkcs8), Ok(false), "{tree}");
        }
    }

    #[test]
    fn sec1_key_without_public_key_is_an_error() {
        let nopub = fixture("pki-extra/ecdsa-apiserver.nopub.key");
        let cert = pem_cert("ecdsa", "apiserver.crt");
        let err = key_matches_cert(&cert, &nopub).unwrap_err();
        assert_eq!(err, PkiError::BadKey("EC key without public key".into()));
        assert_clean_error(&err, &[&nopub]);
        // the same, wrapped as PKCS#8
        let pkcs8 = to_pkcs8(&pem_der(&nopub), true);
        let err = key_matches_cert(&cert, &pkcs8).unwrap_err();
        assert_eq!(err, PkiError::BadKey("EC key without public key".into()));
    }

    #[test]
    fn inconsistent_rsa_key_is_an_error() {
        // swap in the modulus of another key: n no longer equals p*q
        let a = pem_der(&pem_key("rsa", "apiserver.key"));
        let b = pem_der(&pem_key("rsa", "apiserver-kubelet-client.key"));
        let ints = |d: &[u8]| -> Vec<Vec<u8>> {
            der_sequence(d)
                .unwrap()
                .iter()
                .map(|x| der(0x02, x.data))
                .collect()
        };
        let mut parts = ints(&a);
        parts[1] = ints(&b)[1].clone();
        let forged = pem_wrap("RSA PRIVATE KEY", &der(0x30, &parts.concat()));
        let cert = pem_cert("rsa", "apiserver-kubelet-client.crt");
        let err = key_matches_cert(&cert, &forged).unwrap_err();
        assert_eq!(
            err,
            PkiError::BadKey("RSA key components are inconsistent".into())
        );
        assert_clean_error(&err, &[&forged]);
    }

    #[test]
    fn pem_with_other_blocks_first() {
        // EC PARAMETERS before the key, as `openssl ecparam -genkey` writes it
        let key = pem_key("ecdsa", "apiserver.key");
        let params = pem_wrap("EC PARAMETERS", &der(0x06, OID_P256_DER));
        let with_params = [params.clone(), key].concat();
        let cert = pem_cert("ecdsa", "apiserver.crt");
        assert_eq!(key_matches_cert(&cert, &with_params), Ok(true));
        // a certificate after a key block (a combined PEM)
        let combined = [
            pem_key("rsa", "apiserver.key"),
            node("rsa", "etc/kubernetes/pki/apiserver.crt"),
        ]
        .concat();
        assert_eq!(
            parse_pem_certificate(&combined).unwrap(),
            pem_cert("rsa", "apiserver.crt")
        );
        // a bundle: the first certificate counts
        let bundle = [
            node("rsa", "etc/kubernetes/pki/ca.crt"),
            node("rsa", "etc/kubernetes/pki/apiserver.crt"),
        ]
        .concat();
        assert_eq!(
            parse_pem_certificate(&bundle).unwrap().subject,
            "CN=kubernetes"
        );
        // CRLF line endings
        let crlf = String::from_utf8(node("ecdsa", "etc/kubernetes/pki/apiserver.crt"))
            .unwrap()
            .replace('\n', "\r\n");
        assert_eq!(
            parse_pem_certificate(crlf.as_bytes()).unwrap(),
            pem_cert("ecdsa", "apiserver.crt")
        );
        let crlf_key = String::from_utf8(pem_key("ecdsa", "apiserver.key"))
            .unwrap()
            .replace('\n', "\r\n");
        assert_eq!(key_matches_cert(&cert, crlf_key.as_bytes()), Ok(true));
        // DER round trip
        let c = pem_cert("ecdsa", "apiserver.crt");
        assert_eq!(parse_der_certificate(&c.der).unwrap(), c);
    }

    // ---------------------------------------------------------- kubeconfigs

    const KC_TWO_USERS: &str = "\
apiVersion: v1
kind: Config
clusters: []
contexts:
- context: {cluster: k, user: alice}
  name: alice@k
- context: {cluster: k, user: bob}
  name: bob@k
current-context: bob@k
users:
- name: alice
  user:
    client-certificate: /etc/alice.crt
    client-key: /etc/alice.key
- name: bob
  user:
    client-certificate-data: Ym9i
    client-key-data: Ym9iLWtleQ==
";

    #[test]
    fn kubeconfig_follows_current_context() {
        let kc = KC_TWO_USERS.as_bytes();
        assert_eq!(
            kubeconfig_client_cert(kc),
            Ok(KubeconfigCert::Embedded(b"bob".to_vec()))
        );
        assert_eq!(kubeconfig_client_key(kc), Ok(Some(b"bob-key".to_vec())));

        let alice = KC_TWO_USERS.replace("current-context: bob@k", "current-context: alice@k");
        assert_eq!(
            kubeconfig_client_cert(alice.as_bytes()),
            Ok(KubeconfigCert::File("/etc/alice.crt".into()))
        );
        assert_eq!(kubeconfig_client_key(alice.as_bytes()), Ok(None));

        // no current-context and two users: ambiguous
        let none = KC_TWO_USERS.replace("current-context: bob@k\n", "");
        assert!(matches!(
            kubeconfig_client_cert(none.as_bytes()),
            Err(PkiError::BadKubeconfig(_))
        ));

        // a current-context that is not there
        let missing = KC_TWO_USERS.replace("current-context: bob@k", "current-context: carol@k");
        let err = kubeconfig_client_cert(missing.as_bytes()).unwrap_err();
        assert!(err.to_string().contains("carol@k"), "{err}");

        // a context naming a user that is not there
        let nouser = KC_TWO_USERS.replace("user: bob}", "user: dave}");
        assert!(kubeconfig_client_key(nouser.as_bytes()).is_err());
    }

    #[test]
    fn kubeconfig_single_user_without_current_context() {
        let yaml = "apiVersion: v1\nkind: Config\nusers:\n- name: only\n  user:\n    client-certificate-data: b25seQ==\n    client-key-data: a2V5\n";
        assert_eq!(
            kubeconfig_client_cert(yaml.as_bytes()),
            Ok(KubeconfigCert::Embedded(b"only".to_vec()))
        );
        assert_eq!(
            kubeconfig_client_key(yaml.as_bytes()),
            Ok(Some(b"key".to_vec()))
        );
        let empty_cc = yaml.replace("kind: Config\n", "kind: Config\ncurrent-context: \"\"\n");
        assert!(kubeconfig_client_cert(empty_cc.as_bytes()).is_ok());
    }

    #[test]
    fn kubeconfig_conflicts_and_absences() {
        let both = "users:\n- name: u\n  user:\n    client-certificate-data: YQ==\n    client-certificate: /a\n    client-key-data: YQ==\n    client-key: /b\n";
        assert!(kubeconfig_client_cert(both.as_bytes()).is_err());
        assert!(kubeconfig_client_key(both.as_bytes()).is_err());
        let neither = "users:\n- name: u\n  user:\n    token: abc\n";
        assert!(kubeconfig_client_cert(neither.as_bytes()).is_err());
        assert!(kubeconfig_client_key(neither.as_bytes()).is_err());
        let no_body = "users:\n- name: u\n";
        assert!(kubeconfig_client_cert(no_body.as_bytes()).is_err());
    }

    #[test]
    fn kubeconfig_errors_never_show_key_data() {
        let admin = node("rsa", "etc/kubernetes/admin.conf");
        let key = kubeconfig_client_key(&admin).unwrap().unwrap();
        let key_b64 = B64.encode(&key);
        let text = String::from_utf8(admin.clone()).unwrap();

        // key data that is not base64
        let broken = text.replace(
            &key_b64,
            &format!("{}!!!{}", &key_b64[..40], &key_b64[40..]),
        );
        let err = kubeconfig_client_key(broken.as_bytes()).unwrap_err();
        assert_clean_error(&err, &[&key]);
        assert!(!err.to_string().contains(&key_b64[..16]));

        // key data where the YAML wants something else
        let misplaced = format!("users: {key_b64}\n");
        let err = kubeconfig_client_key(misplaced.as_bytes()).unwrap_err();
        assert!(!err.to_string().contains(&key_b64[..16]), "{err}");
        let misplaced = format!("users:\n- name: [{key_b64}]\n");
        let err = kubeconfig_client_key(misplaced.as_bytes()).unwrap_err();
        assert!(!err.to_string().contains(&key_b64[..16]), "{err}");
        let misplaced = format!(
            "current-context: 5\nusers:\n- name: u\n  user:\n    client-key-data: [{key_b64}]\n"
        );
        let err = kubeconfig_client_key(misplaced.as_bytes()).unwrap_err();
        assert!(!err.to_string().contains(&key_b64[..16]), "{err}");

        // the embedded key given where a certificate is expected
        let err = parse_pem_certificate(&key).unwrap_err();
        assert_eq!(err, PkiError::NoCertificate);
    }

    /// Names that YAML would type as a number or a boolean are read as
    /// their text, as serde_yaml's typed reader read them before.
    #[test]
    fn kubeconfig_names_are_text_whatever_yaml_would_type_them() {
        for name in ["1", "true", "y", "0755", "1.5"] {
            let kc = format!(
                "contexts:\n- context:\n    user: {name}\n  name: {name}\ncurrent-context: {name}\nusers:\n- name: {name}\n  user:\n    client-key-data: AAEC\n"
            );
            let key = kubeconfig_client_key(kc.as_bytes()).map_err(|e| e.to_string());
            assert_eq!(key, Ok(Some(vec![0, 1, 2])), "{name}");
        }
    }

    #[test]
    fn kubeconfig_garbage() {
        for input in [
            &b""[..],
            b"[",
            b"- a\n- b\n",
            b"users: 5",
            b"contexts: {a: b}",
            b"\xff\xfe\x00\x01",
            b"apiVersion: v1\nkind: Config\n",
            b"a: &a [*a]",
        ] {
            assert!(matches!(
                kubeconfig_client_cert(input),
                Err(PkiError::BadKubeconfig(_))
            ));
            assert!(matches!(
                kubeconfig_client_key(input),
                Err(PkiError::BadKubeconfig(_))
            ));
        }
    }

    // ---------------------------------------------------------- garbage

    #[test]
    fn garbage_certificates_are_errors() {
        let real = node("rsa", "etc/kubernetes/pki/apiserver.crt");
        let der_bytes = pem_cert("rsa", "apiserver.crt").der;
        assert_eq!(parse_pem_certificate(b""), Err(PkiError::NoCertificate));
        assert_eq!(
            parse_pem_certificate(b"hello\nworld\n"),
            Err(PkiError::NoCertificate)
        );
        assert_eq!(
            parse_pem_certificate(&pem_key("rsa", "apiserver.key")),
            Err(PkiError::NoCertificate)
        );
        for bad in [
            b"-----BEGIN CERTIFICATE-----\n!!!!\n-----END CERTIFICATE-----\n".to_vec(),
            b"-----BEGIN CERTIFICATE-----\nMIIB\n".to_vec(),
            pem_wrap("CERTIFICATE", b"\x30\x03\x02\x01\x00"),
            pem_wrap("CERTIFICATE", &[0u8; 40]),
            pem_wrap("CERTIFICATE", &[&der_bytes[..], b"\x00"].concat()),
            real[..real.len() / 2].to_vec(),
        ] {
            let err = parse_pem_certificate(&bad).unwrap_err();
            assert_clean_error(&err, &[]);
        }
        for cut in 0..der_bytes.len() {
            assert!(
                parse_der_certificate(&der_bytes[..cut]).is_err(),
                "prefix {cut}"
            );
        }
        // a corrupted signature parses but no longer verifies
        let mut tampered = der_bytes.clone();
        let last = tampered.len() - 1;
        tampered[last] ^= 0x01;
        let tampered = parse_der_certificate(&tampered).unwrap();
        assert!(!verify_signed_by(&tampered, &ca("rsa", CaId::Kubernetes)));
    }

    #[test]
    fn garbage_keys_are_errors_without_key_material() {
        let cert = pem_cert("rsa", "apiserver.crt");
        let ec_cert = pem_cert("ecdsa", "apiserver.crt");
        let rsa_key = pem_key("rsa", "apiserver.key");
        let ec_key = pem_key("ecdsa", "apiserver.key");
        let rsa_der = pem_der(&rsa_key);
        let ec_der = pem_der(&ec_key);
        let mut inputs: Vec<Vec<u8>> = vec![
            b"".to_vec(),
            b"not a key".to_vec(),
            node("rsa", "etc/kubernetes/pki/apiserver.crt"),
            node("rsa", "etc/kubernetes/pki/sa.pub"),
            rsa_key[..rsa_key.len() / 2].to_vec(),
            pem_wrap("RSA PRIVATE KEY", &ec_der),
            pem_wrap("EC PRIVATE KEY", &rsa_der),
            pem_wrap("PRIVATE KEY", &rsa_der),
            pem_wrap("ENCRYPTED PRIVATE KEY", &rsa_der),
            pem_wrap("RSA PRIVATE KEY", &[&rsa_der[..], b"\x00"].concat()),
            to_pkcs8(&ec_der, false),
            to_pkcs8(&rsa_der, true),
            String::from_utf8(rsa_key.clone())
                .unwrap()
                .replace(
                    "-----\n",
                    "-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,00\n\n",
                )
                .into_bytes(),
        ];
        for cut in (0..rsa_der.len()).step_by(7) {
            inputs.push(pem_wrap("RSA PRIVATE KEY", &rsa_der[..cut]));
        }
        for cut in 0..ec_der.len() {
            inputs.push(pem_wrap("EC PRIVATE KEY", &ec_der[..cut]));
        }
        for input in &inputs {
            for c in [&cert, &ec_cert] {
                let err = key_matches_cert(c, input).unwrap_err();
                assert!(matches!(err, PkiError::BadKey(_)), "{err}");
                assert_clean_error(&err, &[&rsa_key, &ec_key]);
            }
        }
    }

    #[test]
    fn errors_never_show_key_headers() {
        for e in [
            PkiError::NoCertificate,
            key_matches_cert(&pem_cert("rsa", "apiserver.crt"), b"").unwrap_err(),
            parse_pem_certificate(b"-----BEGIN RSA PRIVATE KEY-----\nxx\n").unwrap_err(),
        ] {
            assert_clean_error(&e, &[]);
        }
    }

    #[test]
    fn ec_point_forms() {
        let x = [1u8, 2, 3, 4];
        let even = [x.as_slice(), &[9, 9, 9, 8]].concat();
        let odd = [x.as_slice(), &[9, 9, 9, 7]].concat();
        let unc = |y: &[u8]| [&[4u8][..], &x, y].concat();
        assert!(ec_points_equal(
            &unc(&even[4..]),
            &[&[2u8][..], &x].concat()
        ));
        assert!(ec_points_equal(&[&[3u8][..], &x].concat(), &unc(&odd[4..])));
        assert!(!ec_points_equal(
            &unc(&odd[4..]),
            &[&[2u8][..], &x].concat()
        ));
        assert!(!ec_points_equal(&[], &[4]));
        assert!(!ec_points_equal(&[2], &[4]));
    }

    mod props {
        use super::*;
        use proptest::prelude::*;

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(256))]

            #[test]
            fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
                let cert = pem_cert("rsa", "apiserver.crt");
                let _ = parse_pem_certificate(&bytes);
                let _ = parse_der_certificate(&bytes);
                let _ = kubeconfig_client_cert(&bytes);
                let _ = kubeconfig_client_key(&bytes);
                if let Err(e) = key_matches_cert(&cert, &bytes) {
                    prop_assert!(!e.to_string().contains("PRIVATE KEY"));
                }
                let _ = key_matches_cert(&cert, &pem_wrap("PRIVATE KEY", &bytes));
                let _ = key_matches_cert(&cert, &pem_wrap("EC PRIVATE KEY", &bytes));
                let _ = parse_pem_certificate(&pem_wrap("CERTIFICATE", &bytes));
            }

            #[test]
            fn mutated_der_never_panics(
                tree in prop::sample::select(TREES.to_vec()),
                pos in any::<prop::sample::Index>(),
                byte in any::<u8>(),
            ) {
                let cert = pem_cert(tree, "apiserver.crt");
                let ca_cert = ca(tree, CaId::Kubernetes);
                let mut der_bytes = cert.der.clone();
                let i = pos.index(der_bytes.len());
                der_bytes[i] = byte;
                if let Ok(c) = parse_der_certificate(&der_bytes) {
                    let _ = verify_signed_by(&c, &ca_cert);
                    let _ = key_matches_cert(&c, &pem_key(tree, "apiserver.key"));
                }
                let label = if tree == "rsa" { "RSA PRIVATE KEY" } else { "EC PRIVATE KEY" };
                let mut key_der = pem_der(&pem_key(tree, "apiserver.key"));
                let j = pos.index(key_der.len());
                key_der[j] = byte;
                match key_matches_cert(&cert, &pem_wrap(label, &key_der)) {
                    Ok(_) => {}
                    Err(e) => prop_assert!(!e.to_string().contains("PRIVATE KEY")),
                }
            }
        }
    }
}
