//! `agentlog pricing`'s answer: the prices a run would use and where they came from.

use serde::Serialize;

use super::{ModelPrice, PriceSource, PriceTable};

/// One model asked for (or every model of the table): what it matched and its price. Rates are
/// in picodollars (10^-12 US dollars) per token.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PricingRow {
    /// The name asked for (the table's key when listing the whole table).
    pub model: String,
    /// The price it matched (`null`: no price; its usage is reported as unpriced).
    pub price: Option<ModelPrice>,
}

/// The prices a run would use.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PricingReport {
    /// Where the table came from.
    pub source: PriceSource,
    /// The unit of every rate: `picodollars_per_token`.
    pub unit: &'static str,
    /// The rows: the models asked for in order, or every model of the table by key.
    pub models: Vec<PricingRow>,
}

/// The prices of `models` in `table` (every model of it when `models` is empty).
pub fn pricing(table: &PriceTable, models: &[String]) -> PricingReport {
    let rows = if models.is_empty() {
        table
            .models()
            .map(|p| PricingRow {
                model: p.key.clone(),
                price: Some(p.clone()),
            })
            .collect()
    } else {
        models
            .iter()
            .map(|m| PricingRow {
                model: m.clone(),
                price: table.lookup(m).cloned(),
            })
            .collect()
    };
    PricingReport {
        source: table.source.clone(),
        unit: "picodollars_per_token",
        models: rows,
    }
}
