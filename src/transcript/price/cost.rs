//! Costs: a usage at a set of rates, how a report chooses between a recorded and a calculated
//! cost ([`CostMode`]), and what a report row's cost adds up to ([`RowCost`]). The rules, with
//! worked examples: docs/COST.md.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use serde::ser::Serializer;
use serde::{Deserialize, Serialize};

use super::{PriceTable, Rates};
use crate::transcript::format::Format;
use crate::transcript::tally::{Money, Tally};
use crate::transcript::tokens::Usage;

/// The cost of `usage` at `rates`: input, output (reasoning included), the 5-minute and
/// 1-hour cache writes and the cache reads, each at its rate; exact (saturating at the top of
/// [`Money`]).
pub(super) fn at(usage: &Usage, rates: &Rates) -> Money {
    let five_minutes = usage.cache_creation.saturating_sub(usage.cache_creation_1h);
    let parts = [
        (usage.input, rates.input),
        (usage.output, rates.output),
        (five_minutes, rates.cache_creation),
        (usage.cache_creation_1h, rates.cache_creation_1h),
        (usage.cache_read, rates.cache_read),
    ];
    let sum: u128 = parts
        .iter()
        .map(|&(tokens, rate)| u128::from(tokens) * u128::from(rate))
        .fold(0, u128::saturating_add);
    Money::from_picodollars(u64::try_from(sum).unwrap_or(u64::MAX))
}

/// Whether a format's transcripts record what each message cost (pi's `usage.cost.total`,
/// `OpenCode`'s `cost`).
pub fn records_cost(format: Format) -> bool {
    matches!(format.name(), "pi" | "opencode")
}

/// Which cost a report shows, as ccusage's `--mode` does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CostMode {
    /// The recorded cost for formats that record one, the calculated cost for the others.
    #[default]
    Auto,
    /// The cost calculated from the price table, for every format.
    Calculate,
    /// The recorded cost only: usage of formats that record none is unpriced.
    Recorded,
}

impl CostMode {
    /// The name used on the command line and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            CostMode::Auto => "auto",
            CostMode::Calculate => "calculate",
            CostMode::Recorded => "recorded",
        }
    }
}

/// Prices buckets by one table and mode, each model name looked up once.
pub(crate) struct Pricer {
    table: Arc<PriceTable>,
    mode: CostMode,
    found: HashMap<String, Option<super::ModelPrice>>,
}

impl Pricer {
    pub(crate) fn new(table: Arc<PriceTable>, mode: CostMode) -> Pricer {
        Pricer {
            table,
            mode,
            found: HashMap::new(),
        }
    }

    /// The cost of a bucket of `format` and `model`, `None` if it has no price.
    pub(crate) fn cost(&mut self, format: Format, model: &str, tally: &Tally) -> Option<Money> {
        let recorded = records_cost(format);
        match self.mode {
            CostMode::Recorded => return recorded.then_some(tally.cost),
            // OpenCode records 0 for what it did not price: such a bucket is priced from its
            // tokens (its messages with a cost are bucketed apart).
            CostMode::Auto
                if recorded && !(format == Format::OpenCode && tally.cost == Money::default()) =>
            {
                return Some(tally.cost);
            }
            CostMode::Auto | CostMode::Calculate => {}
        }
        // Looked up without a key of its own: a report prices thousands of buckets.
        if !self.found.contains_key(model) {
            let price = self.table.lookup(model).cloned();
            self.found.insert(model.to_owned(), price);
        }
        self.found.get(model)?.as_ref().map(|p| p.cost(tally))
    }
}

/// What a row's cost adds up to: the priced part, the models seen, and those without a price
/// (their usage is in the row's tokens but not in its cost). In JSON: `cost_usd` (dollars;
/// `null` when nothing in the row has a price), `models`, `unpriced_models`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RowCost {
    /// The cost of the priced part (`None` when no part has a price).
    pub cost: Option<Money>,
    /// Every model seen.
    pub models: BTreeSet<String>,
    /// The models without a price.
    pub unpriced_models: BTreeSet<String>,
}

impl RowCost {
    /// Adds a bucket of `model` whose cost is `cost` (`None`: unpriced).
    pub fn add(&mut self, model: &str, cost: Option<Money>) {
        if !self.models.contains(model) {
            self.models.insert(model.to_owned());
        }
        match cost {
            Some(c) => self.cost = Some(self.cost.unwrap_or_default().plus(c)),
            None => {
                if !self.unpriced_models.contains(model) {
                    self.unpriced_models.insert(model.to_owned());
                }
            }
        }
    }

    /// Adds another row's cost into this one.
    pub fn merge(&mut self, other: &RowCost) {
        if let Some(c) = other.cost {
            self.cost = Some(self.cost.unwrap_or_default().plus(c));
        }
        self.models.extend(other.models.iter().cloned());
        self.unpriced_models
            .extend(other.unpriced_models.iter().cloned());
    }

    /// The cost in dollars, if any part is priced.
    pub fn usd(&self) -> Option<f64> {
        self.cost.map(Money::dollars)
    }
}

impl Serialize for RowCost {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Json<'a> {
            cost_usd: Option<f64>,
            models: &'a BTreeSet<String>,
            unpriced_models: &'a BTreeSet<String>,
        }
        Json {
            cost_usd: self.usd(),
            models: &self.models,
            unpriced_models: &self.unpriced_models,
        }
        .serialize(serializer)
    }
}
