//! Prices: a table of per-token rates in exact units ([`Money`] picodollars), read from
//! `LiteLLM`'s `model_prices_and_context_window.json` format; an embedded, dated snapshot of it
//! (`litellm.json`, its source in `SOURCE.md`) or a user's file in its place; model names
//! matched as `LiteLLM` keys are; and the cost of a [`Tally`] by the rules in docs/COST.md.

mod cost;
mod parse;
mod report;

use std::collections::BTreeMap;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use serde::Serialize;

pub(crate) use cost::Pricer;
pub use cost::{CostMode, RowCost, records_cost};
pub use parse::PriceError;
pub use report::{PricingReport, PricingRow, pricing};

use super::tally::{Money, Tally};

/// The `LiteLLM` release the embedded table was taken from.
pub const SNAPSHOT_VERSION: &str = "litellm 1.110.2";
/// The day the embedded table was taken.
pub const SNAPSHOT_DATE: &str = "2026-12-05";

/// The embedded table's JSON.
const EMBEDDED: &str = include_str!("litellm.json");

/// Per-token rates of one kind of request, in picodollars per token.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Rates {
    /// Input not read from the cache (`input_cost_per_token`).
    pub input: u64,
    /// Output, reasoning included (`output_cost_per_token`).
    pub output: u64,
    /// Cache writes kept 5 minutes (`cache_creation_input_token_cost`; the input rate when
    /// absent).
    pub cache_creation: u64,
    /// Cache writes kept 1 hour (`cache_creation_input_token_cost_above_1hr`; the 5-minute
    /// rate when absent).
    pub cache_creation_1h: u64,
    /// Cache reads (`cache_read_input_token_cost`; the input rate when absent).
    pub cache_read: u64,
}

/// What one model costs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ModelPrice {
    /// The table's key.
    pub key: String,
    /// The table's `litellm_provider`, if given.
    pub provider: Option<String>,
    /// The rates of a request whose prompt is at most 200,000 tokens.
    pub base: Rates,
    /// The rates of every token of a request whose prompt is above 200,000 tokens (the
    /// table's `*_above_200k_tokens`, each falling back to its base rate), if the model has
    /// such a tier.
    pub long_prompt: Option<Rates>,
}

impl ModelPrice {
    /// The cost of `tally` at these rates: the usage of long prompts at the long-prompt rates
    /// (where the model has them), the rest at the base rates. Exact: linear in the counts,
    /// so a bucket's cost is the sum of its messages' costs.
    pub fn cost(&self, tally: &Tally) -> Money {
        let mut short = tally.usage;
        short.sub(&tally.long_prompt);
        let long_rates = self.long_prompt.unwrap_or(self.base);
        cost::at(&short, &self.base).plus(cost::at(&tally.long_prompt, &long_rates))
    }
}

/// Where a price table came from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum PriceSource {
    /// The snapshot built into agentlog.
    Embedded {
        /// [`SNAPSHOT_VERSION`].
        version: &'static str,
        /// [`SNAPSHOT_DATE`].
        date: &'static str,
    },
    /// A file the user gave (`--pricing FILE`).
    File {
        /// The file.
        path: PathBuf,
    },
}

/// A price table: models by key, and where it came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PriceTable {
    /// Where it came from.
    pub source: PriceSource,
    models: BTreeMap<String, ModelPrice>,
}

/// Provider prefixes tried before a bare name, in order (the prefixes the agents' models are
/// filed under in `LiteLLM`'s table).
const PROVIDERS: &[&str] = &[
    "anthropic/",
    "openai/",
    "gemini/",
    "moonshot/",
    "dashscope/",
    "deepseek/",
    "xai/",
    "zai/",
    "github_copilot/",
];

impl PriceTable {
    /// The embedded snapshot (parsed once per process).
    pub fn embedded() -> Arc<PriceTable> {
        static TABLE: OnceLock<Arc<PriceTable>> = OnceLock::new();
        TABLE
            .get_or_init(|| {
                let source = PriceSource::Embedded {
                    version: SNAPSHOT_VERSION,
                    date: SNAPSHOT_DATE,
                };
                // The embedded table is checked by a test; were it bad, nothing is priced.
                Arc::new(
                    PriceTable::parse(EMBEDDED.as_bytes(), source.clone()).unwrap_or(PriceTable {
                        source,
                        models: BTreeMap::new(),
                    }),
                )
            })
            .clone()
    }

    /// The embedded snapshot's entries that [`PriceTable::lookup`] of `models` can return, and
    /// no others: it prices those models exactly as [`PriceTable::embedded`] does, without
    /// reading the other ~300 entries (half a millisecond, on every status line).
    #[must_use]
    pub fn embedded_for<'a>(models: impl IntoIterator<Item = &'a str>) -> PriceTable {
        let keys: BTreeSet<String> = models
            .into_iter()
            .flat_map(aliases)
            .flat_map(|name| {
                let prefixed: Vec<String> =
                    PROVIDERS.iter().map(|p| format!("{p}{name}")).collect();
                std::iter::once(name).chain(prefixed)
            })
            .collect();
        let source = PriceSource::Embedded {
            version: SNAPSHOT_VERSION,
            date: SNAPSHOT_DATE,
        };
        // The embedded table is checked by a test; were it bad, nothing is priced.
        let models = parse::models_with_keys(EMBEDDED.as_bytes(), &keys).unwrap_or_default();
        PriceTable { source, models }
    }

    /// A table in `LiteLLM`'s format from `bytes`.
    pub fn parse(bytes: &[u8], source: PriceSource) -> Result<PriceTable, PriceError> {
        let models = parse::models(bytes)?;
        Ok(PriceTable { source, models })
    }

    /// The table in the file at `path` (replacing the embedded one, not merged with it).
    pub fn load(path: &Path) -> Result<PriceTable, PriceError> {
        let bytes = std::fs::read(path).map_err(|e| PriceError::Io {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        PriceTable::parse(
            &bytes,
            PriceSource::File {
                path: path.to_path_buf(),
            },
        )
        .map_err(|e| e.in_file(path))
    }

    /// Every model, by key.
    pub fn models(&self) -> impl Iterator<Item = &ModelPrice> {
        self.models.values()
    }

    /// The price of `model`, matched as `LiteLLM` keys are (docs/COST.md, "The price table"): the
    /// name as it is, then under each provider prefix; then the same for its aliases in
    /// order: lower case, without a provider prefix of its own, with dots between digits as
    /// dashes (`claude-opus-4.6`), without a `-YYYYMMDD` date suffix.
    pub fn lookup(&self, model: &str) -> Option<&ModelPrice> {
        aliases(model).into_iter().find_map(|name| {
            self.models.get(&name).or_else(|| {
                PROVIDERS
                    .iter()
                    .find_map(|p| self.models.get(&format!("{p}{name}")))
            })
        })
    }
}

/// The names `model` is looked up under, in order, each once.
fn aliases(model: &str) -> Vec<String> {
    let mut out: Vec<String> = vec![model.to_owned()];
    let push = |out: &mut Vec<String>, name: String| {
        if !name.is_empty() && !out.contains(&name) {
            out.push(name);
        }
    };
    push(&mut out, model.to_ascii_lowercase());
    if let Some((_, bare)) = model.to_ascii_lowercase().rsplit_once('/') {
        push(&mut out, bare.to_owned());
    }
    for name in out.clone() {
        push(&mut out, dashed(&name));
    }
    for name in out.clone() {
        if let Some(stem) = without_date(&name) {
            push(&mut out, stem.to_owned());
        }
    }
    out
}

/// `name` with each dot between two digits made a dash (`4.6` -> `4-6`).
fn dashed(name: &str) -> String {
    let bytes = name.as_bytes();
    name.char_indices()
        .map(|(i, c)| {
            let digit =
                |j: Option<usize>| j.and_then(|j| bytes.get(j)).is_some_and(u8::is_ascii_digit);
            if c == '.' && digit(i.checked_sub(1)) && digit(Some(i + 1)) {
                '-'
            } else {
                c
            }
        })
        .collect()
}

/// `name` without a trailing `-YYYYMMDD`.
fn without_date(name: &str) -> Option<&str> {
    let (stem, date) = name.rsplit_once('-')?;
    (date.len() == 8 && date.bytes().all(|b| b.is_ascii_digit()) && date.starts_with("20"))
        .then_some(stem)
}

#[cfg(test)]
mod tests;
