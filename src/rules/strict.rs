//! The strict reader of the JSON state files (the receipt, the V2 phase
//! file): serde into their one type (`rules::files`), through one small
//! adapter that keeps the messages a reader shows (the key, then the
//! reason), and the forward compatibility of SPEC 3 (a key a newer version
//! added is ignored at the top level).
//!
//! The adapter, [`read`]: refuse what is not UTF-8, not JSON, or repeats a
//! key ([`parse_json_strict`]); refuse what is not an object; drop the keys
//! the type does not know (its fields, as serde names them); read the
//! optional keys first, then refuse a missing one, then read the others in
//! the type's order. A field's message names its key through the [`KEY`]
//! placeholder (`deserialize_with` functions in [`de`]), put in by
//! [`ParseError`]'s `Display`: the only place the message is made.

use crate::rules::opid::excerpt;
use serde::de::{DeserializeOwned, DeserializeSeed, IntoDeserializer, MapAccess, Visitor};
use serde::Deserializer;
use serde_json::Map;
use serde_json::Value;
use std::fmt;

/// Where a field's message names its key (a control character: no
/// excerpt of the input can hold one raw).
pub const KEY: &str = "\u{1}";

/// Why a state file was refused: the key (None: the whole file) and the
/// reason, made a message only when shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    pub key: Option<&'static str>,
    pub reason: String,
}

impl ParseError {
    /// A reason about the whole file.
    pub fn whole(reason: impl Into<String>) -> ParseError {
        ParseError {
            key: None,
            reason: reason.into(),
        }
    }
    /// A reason about `key`, naming it where the reason says [`KEY`].
    pub fn at(key: &'static str, reason: impl Into<String>) -> ParseError {
        ParseError {
            key: Some(key),
            reason: reason.into(),
        }
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.key {
            Some(k) => f.write_str(&self.reason.replace(KEY, k)),
            None => f.write_str(&self.reason),
        }
    }
}

impl std::error::Error for ParseError {}

/// A JSON state file read by [`read`].
pub trait StrictFile: DeserializeOwned {
    /// The keys that may be absent (added after the first version), read
    /// before the others.
    const OPTIONAL: &'static [&'static str];
}

/// Read `bytes` strictly as `T` (see the module's comment).
pub fn read<T: StrictFile>(bytes: &[u8]) -> Result<T, ParseError> {
    let value = parse_json_strict(bytes).map_err(|e| ParseError::whole(e.to_string()))?;
    let Value::Object(mut obj) = value else {
        return Err(ParseError::whole("not a JSON object"));
    };
    let fields = field_names::<T>();
    let mut entries = Vec::new();
    for k in T::OPTIONAL {
        if let Some(v) = obj.remove(*k) {
            entries.push((*k, v));
        }
    }
    let optional = entries.len();
    let required = fields.iter().filter(|k| !T::OPTIONAL.contains(k));
    let missing = required.clone().find(|k| !obj.contains_key(**k)).copied();
    for k in required {
        if let Some(v) = obj.remove(*k) {
            entries.push((k, v));
        }
    }
    let mut at = None;
    let access = Fields {
        entries: entries.into_iter(),
        optional,
        missing,
        read: 0,
        at: &mut at,
    };
    T::deserialize(serde::de::value::MapAccessDeserializer::new(access)).map_err(|e| ParseError {
        key: at,
        reason: e.to_string(),
    })
}

/// The entries in reading order; `at` is the key being read.
struct Fields<'a> {
    entries: std::vec::IntoIter<(&'static str, Value)>,
    optional: usize,
    missing: Option<&'static str>,
    read: usize,
    at: &'a mut Option<&'static str>,
}

impl<'de> MapAccess<'de> for Fields<'_> {
    type Error = serde_json::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Self::Error> {
        if self.read == self.optional {
            if let Some(k) = self.missing {
                return Err(serde::de::Error::custom(format!("missing key {k}")));
            }
        }
        match self.entries.as_slice().first() {
            Some((k, _)) => seed.deserialize(k.into_deserializer()).map(Some),
            None => Ok(None),
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, Self::Error> {
        let Some((k, v)) = self.entries.next() else {
            return Err(serde::de::Error::custom("no value"));
        };
        self.read += 1;
        *self.at = Some(k);
        let value = seed.deserialize(v)?;
        *self.at = None;
        Ok(value)
    }
}

/// The fields of `T` as serde names them, in declaration order.
fn field_names<T: DeserializeOwned>() -> &'static [&'static str] {
    let mut fields: &'static [&'static str] = &[];
    let _ = T::deserialize(FieldNames(&mut fields));
    fields
}

struct FieldNames<'a>(&'a mut &'static [&'static str]);

impl<'de> Deserializer<'de> for FieldNames<'_> {
    type Error = serde::de::value::Error;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
        Err(serde::de::Error::custom("not a struct"))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        fields: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, Self::Error> {
        *self.0 = fields;
        Err(serde::de::Error::custom("fields read"))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map enum identifier ignored_any
    }
}

/// Parse JSON, refusing duplicate object keys at any depth (serde_json keeps
/// the last one silently). The error never quotes more than a short, escaped
/// excerpt of the input.
pub fn parse_json_strict(bytes: &[u8]) -> Result<Value, JsonError> {
    if let Err(e) = std::str::from_utf8(bytes) {
        return Err(JsonError::NotUtf8(e.valid_up_to()));
    }
    serde_json::from_slice::<NoDupValue>(bytes)
        .map(|v| v.0)
        .map_err(|e| JsonError::Invalid(one_line(&e.to_string())))
}

/// Why bytes are not strict JSON (the excerpt is one escaped line).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JsonError {
    #[error("not UTF-8 (invalid byte at offset {0})")]
    NotUtf8(usize),
    #[error("not valid JSON: {0}")]
    Invalid(String),
}

/// A key an object should or should not have; `prefix` names the enclosing
/// object (`"manifests."`), `key` is escaped when it came from the input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    #[error("unknown key {prefix}{key}")]
    Unknown { prefix: String, key: String },
    #[error("missing key {prefix}{key}")]
    Missing { prefix: String, key: String },
    #[error("{prefix}{key} is not 64 lowercase hex digits")]
    NotSha256Hex { prefix: String, key: String },
}

/// At most 200 characters of `s`, escaped to one printable ASCII line.
fn one_line(s: &str) -> String {
    let mut out: String = s.chars().take(200).flat_map(char::escape_default).collect();
    if s.chars().nth(200).is_some() {
        out.push_str("...");
    }
    out
}

/// A `serde_json::Value` whose objects had no repeated key.
struct NoDupValue(Value);

impl<'de> serde::Deserialize<'de> for NoDupValue {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(NoDupVisitor).map(NoDupValue)
    }
}

struct NoDupVisitor;

impl<'de> serde::de::Visitor<'de> for NoDupVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Value, E> {
        serde_json::Number::from_f64(v)
            .map(Value::Number)
            .ok_or_else(|| E::custom("number out of range"))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut v = Vec::new();
        while let Some(NoDupValue(x)) = seq.next_element()? {
            v.push(x);
        }
        Ok(Value::Array(v))
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut m = Map::new();
        while let Some(k) = map.next_key::<String>()? {
            if m.contains_key(&k) {
                return Err(serde::de::Error::custom(format!(
                    "duplicate key {}",
                    excerpt(&k)
                )));
            }
            let NoDupValue(v) = map.next_value()?;
            m.insert(k, v);
        }
        Ok(Value::Object(m))
    }
}

/// The object has every one of `keys`; a key a newer version added is
/// ignored (SPEC 3, "Forward compatibility", v1.2). `prefix` names the
/// enclosing object in the error (`"resumedFrom."`).
pub fn check_known_keys(
    obj: &Map<String, Value>,
    keys: &[&str],
    prefix: &str,
) -> Result<(), KeyError> {
    match keys.iter().find(|k| !obj.contains_key(**k)) {
        Some(k) => Err(KeyError::Missing {
            prefix: prefix.to_string(),
            key: k.to_string(),
        }),
        None => Ok(()),
    }
}

/// The object has exactly the `keys`: no unknown key, none missing (a map
/// whose keys are data, such as the four components).
/// `prefix` names the enclosing object in the error (`"manifests."`).
pub fn check_keys(obj: &Map<String, Value>, keys: &[&str], prefix: &str) -> Result<(), KeyError> {
    if let Some(k) = obj.keys().find(|k| !keys.contains(&k.as_str())) {
        return Err(KeyError::Unknown {
            prefix: prefix.to_string(),
            key: excerpt(k),
        });
    }
    if let Some(k) = keys.iter().find(|k| !obj.contains_key(**k)) {
        return Err(KeyError::Missing {
            prefix: prefix.to_string(),
            key: k.to_string(),
        });
    }
    Ok(())
}

/// The longest timestamp accepted (well above `2026-11-30T00:00:00.123456789Z`).
const MAX_TIMESTAMP_LEN: usize = 40;

/// `YYYY-MM-DDTHH:MM:SS[.f{1,9}]Z` exactly: upper-case `T` and `Z`, no space
/// separator (the time crate alone accepts a few more spellings).
fn is_utc_timestamp_shape(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() < 20 || b.len() > MAX_TIMESTAMP_LEN || b[b.len() - 1] != b'Z' {
        return false;
    }
    let shape = b"dddd-dd-ddTdd:dd:dd";
    let fixed = shape.iter().zip(b).all(|(want, got)| match want {
        b'd' => got.is_ascii_digit(),
        w => w == got,
    });
    let frac = &b[19..b.len() - 1];
    let frac_ok = frac.is_empty()
        || (frac[0] == b'.'
            && (2..=10).contains(&frac.len())
            && frac[1..].iter().all(u8::is_ascii_digit));
    fixed && frac_ok
}

/// `s` (the value of `key`) is an RFC 3339 UTC (`...Z`) timestamp.
pub fn check_time(key: &'static str, s: &str) -> Result<(), ParseError> {
    if !is_utc_timestamp_shape(s) || crate::rules::clock::parse_rfc3339(s, true).is_err() {
        return Err(ParseError::at(
            key,
            format!(
                "{KEY} {} is not an RFC 3339 UTC timestamp (ending in Z)",
                excerpt(s)
            ),
        ));
    }
    Ok(())
}

/// The fields' readers (`#[serde(deserialize_with = ...)]`): each refuses
/// with the message a reader shows, naming its key as [`KEY`].
pub mod de {
    use super::check_time;
    use super::{KeyError, KEY};
    use crate::rules::component::Component;
    use crate::rules::opid::{excerpt, OperationId};
    pub(crate) use crate::rules::values::check_message;
    use crate::rules::values::CA_KEYS;
    use crate::rules::values::{
        is_sha256_hex, CaSha256, CaSha256All, ManifestLocations, Message, Timestamp,
    };
    use serde::de::Error;
    use serde::{Deserialize, Deserializer};
    use serde_json::{Map, Value};
    use std::collections::BTreeMap;
    use std::str::FromStr;

    fn value<'de, D: Deserializer<'de>>(d: D) -> Result<Value, D::Error> {
        Value::deserialize(d)
    }

    /// A string.
    pub fn string<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
        match value(d)? {
            Value::String(s) => Ok(s),
            _ => Err(D::Error::custom(format!("{KEY} is not a string"))),
        }
    }

    /// Exactly `want` (a file's format).
    pub fn exactly<'de, D: Deserializer<'de>>(d: D, want: &str) -> Result<(), D::Error> {
        let s = string(d)?;
        if s == want {
            Ok(())
        } else {
            Err(D::Error::custom(format!(
                "{KEY} is {}, expected {want:?}",
                excerpt(&s)
            )))
        }
    }

    /// A boolean.
    pub fn boolean<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
        match value(d)? {
            Value::Bool(b) => Ok(b),
            _ => Err(D::Error::custom(format!("{KEY} is not a boolean"))),
        }
    }

    /// A string `T` parses (the operation ID, the outcome, the phase).
    pub fn parsed<'de, D: Deserializer<'de>, T: FromStr<Err: std::fmt::Display>>(
        d: D,
    ) -> Result<T, D::Error> {
        string(d)?
            .parse()
            .map_err(|e| D::Error::custom(format!("{KEY}: {e}")))
    }

    /// An operation ID.
    pub fn operation_id<'de, D: Deserializer<'de>>(d: D) -> Result<OperationId, D::Error> {
        parsed(d)
    }

    /// A bounded message (its own words name it: `message is ...`).
    pub fn message<'de, D: Deserializer<'de>>(d: D) -> Result<Message, D::Error> {
        let s = string(d)?;
        check_message(&s).map_err(D::Error::custom)?;
        Ok(Message(s))
    }

    /// Null or a bounded message.
    pub fn opt_message<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Message>, D::Error> {
        match value(d)? {
            Value::Null => Ok(None),
            Value::String(s) => {
                check_message(&s).map_err(|e| D::Error::custom(format!("{KEY}: {e}")))?;
                Ok(Some(Message(s)))
            }
            _ => Err(D::Error::custom(format!("{KEY} is not a string"))),
        }
    }

    /// Null or one of the four components.
    pub fn opt_component<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Component>, D::Error> {
        match value(d)? {
            Value::Null => Ok(None),
            Value::String(s) => Component::from_name(&s).map(Some).ok_or_else(|| {
                D::Error::custom(format!(
                    "{KEY} {} is not one of the four components",
                    excerpt(&s)
                ))
            }),
            _ => Err(D::Error::custom(format!(
                "{KEY} is not a component name or null"
            ))),
        }
    }

    /// An RFC 3339 UTC timestamp, kept as written.
    pub fn timestamp<'de, D: Deserializer<'de>>(d: D) -> Result<Timestamp, D::Error> {
        let s = string(d)?;
        check_time(KEY, &s).map_err(D::Error::custom)?;
        Ok(Timestamp(s))
    }

    /// An object with exactly the four components, each a location.
    pub fn manifests<'de, D: Deserializer<'de>>(d: D) -> Result<ManifestLocations, D::Error> {
        let Value::Object(m) = value(d)? else {
            return Err(D::Error::custom(format!("{KEY} is not an object")));
        };
        let prefix = format!("{KEY}.");
        super::check_keys(&m, &Component::ALL.map(Component::name), &prefix)
            .map_err(D::Error::custom)?;
        let mut at = BTreeMap::new();
        for c in Component::ALL {
            let loc = m
                .get(c.name())
                .and_then(Value::as_str)
                .ok_or_else(|| D::Error::custom(format!("{KEY}.{c} is not a string")))?
                .parse()
                .map_err(|e| D::Error::custom(format!("{KEY}.{c}: {e}")))?;
            at.insert(c, loc);
        }
        Ok(ManifestLocations::from(&at))
    }

    /// CA fingerprints keyed among `CA_KEYS`, all three when `all_three`.
    fn ca_map<E: Error>(v: Value, all_three: bool) -> Result<BTreeMap<String, String>, E> {
        let Value::Object(m) = v else {
            return Err(E::custom(format!("{KEY} is not an object")));
        };
        ca_entries(&m, all_three).map_err(E::custom)
    }

    fn ca_entries(
        m: &Map<String, Value>,
        all_three: bool,
    ) -> Result<BTreeMap<String, String>, KeyError> {
        let prefix = || format!("{KEY}.");
        if let Some(k) = m.keys().find(|k| !CA_KEYS.contains(&k.as_str())) {
            return Err(KeyError::Unknown {
                prefix: prefix(),
                key: excerpt(k),
            });
        }
        if all_three {
            if let Some(k) = CA_KEYS.iter().find(|k| !m.contains_key(**k)) {
                return Err(KeyError::Missing {
                    prefix: prefix(),
                    key: k.to_string(),
                });
            }
        }
        let mut hex = BTreeMap::new();
        for (k, v) in m {
            match v.as_str() {
                Some(h) if is_sha256_hex(h) => {
                    hex.insert(k.clone(), h.to_string());
                }
                _ => {
                    return Err(KeyError::NotSha256Hex {
                        prefix: prefix(),
                        key: k.clone(),
                    })
                }
            }
        }
        Ok(hex)
    }

    /// Some of the three CA fingerprints (a receipt's).
    pub fn ca_some<'de, D: Deserializer<'de>>(d: D) -> Result<CaSha256, D::Error> {
        let m = ca_map::<D::Error>(value(d)?, false)?;
        Ok(CaSha256::from(&m))
    }

    /// All three CA fingerprints (a phase file's).
    pub fn ca_all<'de, D: Deserializer<'de>>(d: D) -> Result<CaSha256All, D::Error> {
        let m = ca_map::<D::Error>(value(d)?, true)?;
        Ok(CaSha256All::from(&m))
    }
}
