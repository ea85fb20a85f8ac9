//! Reading a price table in `LiteLLM`'s format: a JSON object from model key to an object of
//! fields, of which the per-token costs in dollars are read (docs/COST.md, "The price
//! table"). A model without `input_cost_per_token` is not priced per token and is left out; a
//! cost that is not a number from 0 to $1 per token is refused with the model and field named.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};

use serde::de::{self, Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::{Map, Value};

use super::{ModelPrice, Rates};
use crate::transcript::tally::Money;

/// A price table that cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PriceError {
    /// The file could not be read.
    #[error("cannot read the price file {}: {message}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        message: String,
    },
    /// The bytes are not a JSON object.
    #[error("{}not a price table (a JSON object of models): {message}", place(path.as_deref()))]
    NotATable {
        /// The file, if the table came from one.
        path: Option<PathBuf>,
        /// What is wrong.
        message: String,
    },
    /// A model's entry or one of its costs is not usable.
    #[error("{}model {model:?}: {field} {reason}", place(path.as_deref()))]
    BadPrice {
        /// The file, if the table came from one.
        path: Option<PathBuf>,
        /// The model's key.
        model: String,
        /// The field (`entry` for the entry itself).
        field: String,
        /// What is wrong.
        reason: &'static str,
    },
}

fn place(path: Option<&Path>) -> String {
    path.map(|p| format!("{}: ", p.display()))
        .unwrap_or_default()
}

impl PriceError {
    /// The error with the file it came from.
    #[must_use]
    pub(crate) fn in_file(self, file: &Path) -> PriceError {
        match self {
            PriceError::NotATable { message, .. } => PriceError::NotATable {
                path: Some(file.to_path_buf()),
                message,
            },
            PriceError::BadPrice {
                model,
                field,
                reason,
                ..
            } => PriceError::BadPrice {
                path: Some(file.to_path_buf()),
                model,
                field,
                reason,
            },
            io @ PriceError::Io { .. } => io,
        }
    }
}

/// The largest rate accepted: one dollar per token.
const MAX_RATE: u64 = Money::PER_DOLLAR;

/// The fields read, for the base rates and the long-prompt rates.
const BASE: [&str; 5] = [
    "input_cost_per_token",
    "output_cost_per_token",
    "cache_creation_input_token_cost",
    "cache_creation_input_token_cost_above_1hr",
    "cache_read_input_token_cost",
];
const LONG: [&str; 5] = [
    "input_cost_per_token_above_200k_tokens",
    "output_cost_per_token_above_200k_tokens",
    "cache_creation_input_token_cost_above_200k_tokens",
    "cache_creation_input_token_cost_above_1hr_above_200k_tokens",
    "cache_read_input_token_cost_above_200k_tokens",
];

/// The models of a table in `LiteLLM`'s format.
pub(super) fn models(bytes: &[u8]) -> Result<BTreeMap<String, ModelPrice>, PriceError> {
    let not_table = |message: String| PriceError::NotATable {
        path: None,
        message,
    };
    let Table(table) = serde_json::from_slice(bytes).map_err(|e| not_table(e.to_string()))?;
    let table = table.ok_or_else(|| not_table("the top level is not an object".to_owned()))?;
    prices(table)
}

/// The models of the table in `bytes` whose keys are in `keys`, every other entry skipped
/// unread (for a table known to be good: the embedded one).
pub(super) fn models_with_keys(
    bytes: &[u8],
    keys: &BTreeSet<String>,
) -> Result<BTreeMap<String, ModelPrice>, PriceError> {
    let not_table = |e: serde_json::Error| PriceError::NotATable {
        path: None,
        message: e.to_string(),
    };
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let table = de.deserialize_map(Chosen(keys)).map_err(not_table)?;
    de.end().map_err(not_table)?;
    prices(table)
}

/// A visitor of the top level that keeps the entries of the keys it holds.
struct Chosen<'k>(&'k BTreeSet<String>);

impl<'de> Visitor<'de> for Chosen<'_> {
    type Value = BTreeMap<String, Entry>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut out = BTreeMap::new();
        while let Some(key) = map.next_key::<String>()? {
            if self.0.contains(&key) {
                out.insert(key, map.next_value::<Entry>()?);
            } else {
                map.next_value::<de::IgnoredAny>()?;
            }
        }
        Ok(out)
    }
}

/// The priced models among the entries read.
fn prices(table: BTreeMap<String, Entry>) -> Result<BTreeMap<String, ModelPrice>, PriceError> {
    let mut out = BTreeMap::new();
    for (key, Entry(entry)) in table {
        let Some(fields) = entry else {
            return Err(bad(&key, "entry", "is not an object"));
        };
        if let Some(price) = model(&key, &fields)? {
            out.insert(key, price);
        }
    }
    Ok(out)
}

/// The top level as read: its entries by key (a repeated key: the last), `None` when it is
/// not an object. Read straight from the bytes, not through a `Value` of the whole file: the
/// embedded table is parsed on every start of a status line.
struct Table(Option<BTreeMap<String, Entry>>);

/// An entry as read: the fields [`model`] uses, every other field skipped unread; `None`
/// when the entry is not an object.
struct Entry(Option<Map<String, Value>>);

/// Whether a field is one [`model`] reads.
fn used(name: &str) -> bool {
    name == "litellm_provider" || BASE.contains(&name) || LONG.contains(&name)
}

/// A visitor that answers `make` for an object and `None` for every other JSON value (each
/// read to its end, as a `Value` would be).
macro_rules! not_an_object {
    ($out:ty) => {
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<$out, E> {
            Ok(None)
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<$out, E> {
            Ok(None)
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<$out, E> {
            Ok(None)
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<$out, E> {
            Ok(None)
        }
        fn visit_str<E: de::Error>(self, _: &str) -> Result<$out, E> {
            Ok(None)
        }
        fn visit_unit<E: de::Error>(self) -> Result<$out, E> {
            Ok(None)
        }
        fn visit_none<E: de::Error>(self) -> Result<$out, E> {
            Ok(None)
        }
        fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<$out, A::Error> {
            while seq.next_element::<Checked>()?.is_some() {}
            Ok(None)
        }
    };
}

/// A value read as a `Value` would be (every string unescaped, every number parsed, so the
/// same files are refused) and dropped, without building it.
struct Checked;

impl<'de> Deserialize<'de> for Checked {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Checked, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Checked;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Checked, E> {
                Ok(Checked)
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Checked, E> {
                Ok(Checked)
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Checked, E> {
                Ok(Checked)
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Checked, E> {
                Ok(Checked)
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Checked, E> {
                Ok(Checked)
            }
            fn visit_unit<E: de::Error>(self) -> Result<Checked, E> {
                Ok(Checked)
            }
            fn visit_none<E: de::Error>(self) -> Result<Checked, E> {
                Ok(Checked)
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Checked, A::Error> {
                while seq.next_element::<Checked>()?.is_some() {}
                Ok(Checked)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Checked, A::Error> {
                while map.next_entry::<Checked, Checked>()?.is_some() {}
                Ok(Checked)
            }
        }
        d.deserialize_any(V)
    }
}

impl<'de> Deserialize<'de> for Table {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Table, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Option<BTreeMap<String, Entry>>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut out = BTreeMap::new();
                while let Some((key, entry)) = map.next_entry::<String, Entry>()? {
                    out.insert(key, entry);
                }
                Ok(Some(out))
            }
            not_an_object!(Self::Value);
        }
        d.deserialize_any(V).map(Table)
    }
}

impl<'de> Deserialize<'de> for Entry {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Entry, D::Error> {
        /// A field's name: kept if [`used`], else only checked to be a string.
        struct Name(Option<String>);
        impl<'de> Deserialize<'de> for Name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Name, D::Error> {
                struct N;
                impl Visitor<'_> for N {
                    type Value = Name;
                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        f.write_str("a field name")
                    }
                    fn visit_str<E: de::Error>(self, name: &str) -> Result<Name, E> {
                        Ok(Name(used(name).then(|| name.to_owned())))
                    }
                }
                d.deserialize_str(N)
            }
        }
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Option<Map<String, Value>>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut fields = Map::new();
                while let Some(Name(name)) = map.next_key::<Name>()? {
                    match name {
                        Some(name) => {
                            fields.insert(name, map.next_value::<Value>()?);
                        }
                        None => {
                            map.next_value::<Checked>()?;
                        }
                    }
                }
                Ok(Some(fields))
            }
            not_an_object!(Self::Value);
        }
        d.deserialize_any(V).map(Entry)
    }
}

fn bad(model: &str, field: &str, reason: &'static str) -> PriceError {
    PriceError::BadPrice {
        path: None,
        model: model.to_owned(),
        field: field.to_owned(),
        reason,
    }
}

/// One model's price (`None` when it has no per-token input cost).
fn model(key: &str, fields: &Map<String, Value>) -> Result<Option<ModelPrice>, PriceError> {
    let read = |names: [&str; 5]| -> Result<[Option<u64>; 5], PriceError> {
        let mut out = [None; 5];
        for (slot, name) in out.iter_mut().zip(names) {
            *slot = rate(key, name, fields.get(name))?;
        }
        Ok(out)
    };
    let base = read(BASE)?;
    let long = read(LONG)?;
    let [Some(input), output, creation, creation_1h, cache_read] = base else {
        return Ok(None);
    };
    let base_rates = Rates {
        input,
        output: output.unwrap_or(0),
        cache_creation: creation.unwrap_or(input),
        cache_creation_1h: creation_1h.or(creation).unwrap_or(input),
        cache_read: cache_read.unwrap_or(input),
    };
    let long_rates = long.iter().any(Option::is_some).then(|| {
        let [l_input, l_output, l_creation, l_creation_1h, l_read] = long;
        Rates {
            input: l_input.unwrap_or(base_rates.input),
            output: l_output.unwrap_or(base_rates.output),
            cache_creation: l_creation.unwrap_or(base_rates.cache_creation),
            cache_creation_1h: l_creation_1h.unwrap_or(base_rates.cache_creation_1h),
            cache_read: l_read.unwrap_or(base_rates.cache_read),
        }
    });
    let provider = fields
        .get("litellm_provider")
        .and_then(Value::as_str)
        .map(str::to_owned);
    Ok(Some(ModelPrice {
        key: key.to_owned(),
        provider,
        base: base_rates,
        long_prompt: long_rates,
    }))
}

/// A cost in dollars per token as picodollars per token, rounded to the nearest one (`LiteLLM`'s
/// rates are whole picodollars but for a few; docs/COST.md). Absent or `null`: `None`.
// Checked to be finite and within 0..=MAX_RATE before the cast.
#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_precision_loss
)]
fn rate(model: &str, field: &str, value: Option<&Value>) -> Result<Option<u64>, PriceError> {
    let dollars = match value {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Number(n)) => n.as_f64(),
        Some(_) => return Err(bad(model, field, "is not a number")),
    };
    let Some(dollars) = dollars else {
        return Err(bad(model, field, "is not a number"));
    };
    let units = (dollars * Money::PER_DOLLAR as f64).round();
    if !units.is_finite() || units < 0.0 {
        return Err(bad(model, field, "is negative or not finite"));
    }
    if units > MAX_RATE as f64 {
        return Err(bad(model, field, "is above $1 per token"));
    }
    Ok(Some(units as u64))
}
