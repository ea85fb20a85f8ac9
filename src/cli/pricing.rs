//! `agentlog pricing [MODEL...]`: the prices `usage` and `statusline` use, and where they came
//! from (the embedded snapshot, or `--pricing FILE`).

use std::path::PathBuf;
use std::sync::Arc;

use agentlog::transcript::{PriceSource, PriceTable, PricingReport, pricing};

use super::table::{header, render};
use super::{EXIT_BAD_INPUT, EXIT_OK, Failure, print_json};

/// The arguments of `agentlog pricing`.
#[derive(clap::Args)]
pub struct Args {
    /// Model names to look up, as transcripts write them (default: the whole table).
    models: Vec<String>,
    /// A price file in `LiteLLM`'s `model_prices_and_context_window.json` format, used instead
    /// of the embedded table.
    #[arg(long, value_name = "FILE")]
    pricing: Option<PathBuf>,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// The table `--pricing FILE` names, or the embedded one.
pub fn table(file: Option<&PathBuf>) -> Result<Arc<PriceTable>, Failure> {
    match file {
        None => Ok(PriceTable::embedded()),
        Some(path) => PriceTable::load(path)
            .map(Arc::new)
            .map_err(|e| Failure::new("bad_pricing", EXIT_BAD_INPUT, e.to_string())),
    }
}

/// Runs the command.
pub fn run(args: &Args) -> Result<u8, Failure> {
    let table = table(args.pricing.as_ref())?;
    let report = pricing(&table, &args.models);
    if args.json {
        print_json(&report)?;
    } else {
        out!("{}", human(&report));
    }
    Ok(EXIT_OK)
}

/// Dollars per million tokens of a rate in picodollars per token.
fn per_million(rate: u64) -> String {
    // A picodollar per token is a microdollar per million tokens.
    let micro = rate;
    let whole = micro / 1_000_000;
    let frac = micro % 1_000_000;
    let text = format!("{whole}.{frac:06}");
    let trimmed = text.trim_end_matches('0');
    let trimmed = trimmed.strip_suffix('.').unwrap_or(trimmed);
    format!("${trimmed}")
}

fn human(report: &PricingReport) -> String {
    let mut rows = vec![header(&[
        "model",
        "matched",
        "input",
        "output",
        "cache_write_5m",
        "cache_write_1h",
        "cache_read",
        ">200k input",
        ">200k output",
    ])];
    for row in &report.models {
        let mut line = vec![row.model.clone()];
        match &row.price {
            None => line.push("(no price)".to_owned()),
            Some(p) => {
                let b = &p.base;
                line.push(p.key.clone());
                line.extend(
                    [
                        b.input,
                        b.output,
                        b.cache_creation,
                        b.cache_creation_1h,
                        b.cache_read,
                    ]
                    .map(per_million),
                );
                if let Some(l) = &p.long_prompt {
                    line.extend([l.input, l.output].map(per_million));
                }
            }
        }
        rows.push(line);
    }
    let source = match &report.source {
        PriceSource::Embedded { version, date } => {
            format!("the embedded snapshot of LiteLLM's prices ({version}, taken {date})")
        }
        PriceSource::File { path } => format!("{}", path.display()),
    };
    format!("{}\nUSD per million tokens, from {source}\n", render(&rows))
}
