//! Cost against a naive oracle: each transcript's buckets counted by the transcript oracle
//! (every line parsed whole), each bucket priced in the test from the raw JSON price file
//! (`--pricing FILE`'s format) in plain float dollars, and compared to the cent with what
//! `usage` answers, row by row; on the real Claude Code transcripts (1-hour cache writes), the
//! Codex rollouts (cached input) and generated files (long prompts). A model the file does not
//! price is reported, never $0.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::cast_precision_loss,
    clippy::float_cmp
)]

#[path = "common/transcript_fixtures.rs"]
mod fixtures;
#[path = "common/transcript_gen.rs"]
mod generate;
#[path = "common/transcript_oracle.rs"]
mod oracle;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use agentlog::transcript::{
    CostMode, Format, GroupBy, OpenOptions, PriceTable, UsageOptions, day_of, usage,
};
use jiff::tz::TimeZone;
use serde_json::{Value, json};

/// A price file with rates of every kind, distinct from one another, a long-prompt tier on
/// one model, and no price for `claude-opus-4-5` (so its usage is unpriced).
fn price_file() -> Value {
    json!({
        "claude-opus-4-6": {
            "input_cost_per_token": 5e-06, "output_cost_per_token": 2.5e-05,
            "cache_creation_input_token_cost": 6.25e-06,
            "cache_creation_input_token_cost_above_1hr": 1e-05,
            "cache_read_input_token_cost": 5e-07,
            "input_cost_per_token_above_200k_tokens": 1e-05,
            "output_cost_per_token_above_200k_tokens": 3.75e-05,
            "cache_creation_input_token_cost_above_200k_tokens": 1.25e-05,
            "cache_read_input_token_cost_above_200k_tokens": 1e-06
        },
        "anthropic/claude-sonnet-4-5-20250929": {
            "input_cost_per_token": 3e-06, "output_cost_per_token": 1.5e-05,
            "cache_creation_input_token_cost": 3.75e-06,
            "cache_creation_input_token_cost_above_1hr": 6e-06,
            "cache_read_input_token_cost": 3e-07
        },
        "gpt-5.3-codex": {
            "input_cost_per_token": 1.75e-06, "output_cost_per_token": 1.4e-05,
            "cache_read_input_token_cost": 1.75e-07
        },
        "gpt-5.2-codex": {
            "input_cost_per_token": 1.75e-06, "output_cost_per_token": 1.4e-05,
            "cache_read_input_token_cost": 1.75e-07
        },
        "github_copilot/claude-sonnet-4.6": {
            "input_cost_per_token": 3e-06, "output_cost_per_token": 1.5e-05,
            "cache_creation_input_token_cost": 3.75e-06,
            "cache_read_input_token_cost": 3e-07
        },
        "github_copilot/gpt-5": {
            "input_cost_per_token": 1.25e-06, "output_cost_per_token": 1e-05,
            "cache_read_input_token_cost": 1.25e-07
        },
        "moonshot-ai/kimi-k2.7-code": {
            "input_cost_per_token": 9.5e-07, "output_cost_per_token": 4e-06,
            "cache_read_input_token_cost": 1.9e-07
        },
        "claude-sonnet-4-20250514": {
            "input_cost_per_token": 3e-06, "output_cost_per_token": 1.5e-05,
            "cache_creation_input_token_cost": 3.75e-06,
            "cache_read_input_token_cost": 3e-07,
            "input_cost_per_token_above_200k_tokens": 6e-06,
            "output_cost_per_token_above_200k_tokens": 2.25e-05
        }
    })
}

/// The naive price of a bucket: `(input, output, 5-minute writes, 1-hour writes, reads)`
/// of its short and long parts at the file's rates, each absent rate falling back as
/// docs/COST.md says.
fn naive(table: &Value, model: &str, sum: &oracle::Sum) -> Option<f64> {
    // The name, then with dots between digits as dashes (`claude-opus-4.6`); each bare, then
    // under the prefixes this file uses.
    let chars: Vec<char> = model.chars().collect();
    let dashed: String = chars
        .iter()
        .enumerate()
        .map(|(i, &c)| {
            let digit = |j: Option<usize>| {
                j.and_then(|j| chars.get(j))
                    .is_some_and(char::is_ascii_digit)
            };
            if c == '.' && digit(i.checked_sub(1)) && digit(Some(i + 1)) {
                '-'
            } else {
                c
            }
        })
        .collect();
    let entry = [model.to_owned(), dashed].iter().find_map(|name| {
        table
            .get(name)
            .or_else(|| table.get(format!("anthropic/{name}")))
            .or_else(|| table.get(format!("github_copilot/{name}")))
    })?;
    let rate = |f: &str| entry.get(f).and_then(Value::as_f64);
    let input = rate("input_cost_per_token")?;
    let base = [
        input,
        rate("output_cost_per_token").unwrap_or(0.0),
        rate("cache_creation_input_token_cost").unwrap_or(input),
        rate("cache_creation_input_token_cost_above_1hr")
            .or(rate("cache_creation_input_token_cost"))
            .unwrap_or(input),
        rate("cache_read_input_token_cost").unwrap_or(input),
    ];
    let long_names = [
        "input_cost_per_token_above_200k_tokens",
        "output_cost_per_token_above_200k_tokens",
        "cache_creation_input_token_cost_above_200k_tokens",
        "cache_creation_input_token_cost_above_1hr_above_200k_tokens",
        "cache_read_input_token_cost_above_200k_tokens",
    ];
    let mut long = base;
    for (l, name) in long.iter_mut().zip(long_names) {
        if let Some(r) = rate(name) {
            *l = r;
        }
    }
    // The long part's counts: input, output, cache creation, cache read, reasoning, 1h, total.
    let [li, lo, lc, lr, _, l1, _] = sum.long;
    let parts = |i: u64, o: u64, c: u64, r: u64, h: u64, rates: [f64; 5]| {
        i as f64 * rates[0]
            + o as f64 * rates[1]
            + (c - h) as f64 * rates[2]
            + h as f64 * rates[3]
            + r as f64 * rates[4]
    };
    let short = parts(
        sum.input - li,
        sum.output - lo,
        sum.cache_creation - lc,
        sum.cache_read - lr,
        sum.cache_creation_1h - l1,
        base,
    );
    Some(short + parts(li, lo, lc, lr, l1, long))
}

/// Compares `usage --by day` over one file with the oracle priced naively.
fn check(dir: &Path, file: &Path, format: Format, table: &Value, prices: &Arc<PriceTable>) {
    let bytes = std::fs::read(file).unwrap();
    let expected = oracle::expected(format, &bytes);
    let mut days: BTreeMap<String, (f64, bool)> = BTreeMap::new();
    let mut unpriced = Vec::new();
    for ((quarter, model), sum) in &expected.buckets {
        if sum.is_zero() {
            continue;
        }
        let day = day_of(*quarter).map_or_else(|| "unknown".to_owned(), |d| d.to_string());
        let name = model.clone().unwrap_or_else(|| "unknown".to_owned());
        let cell = days.entry(day).or_default();
        match naive(table, &name, sum) {
            Some(c) => *cell = (cell.0 + c, true),
            None => unpriced.push(name),
        }
    }
    let options = UsageOptions {
        open: OpenOptions {
            index_dir: Some(dir.join("index")),
            ..OpenOptions::default()
        },
        by: GroupBy::Day,
        timezone: TimeZone::UTC,
        cost: CostMode::Calculate,
        prices: prices.clone(),
        snapshot: false,
        ..UsageOptions::default()
    };
    let report = usage(&[file.to_path_buf()], &options, &|_, _| {});
    let json = serde_json::to_value(&report).unwrap();
    for row in json["rows"].as_array().unwrap() {
        let day = row["day"].as_str().unwrap();
        let (want, any_priced) = days.get(day).copied().unwrap_or_default();
        let got = row["cost_usd"].as_f64();
        if any_priced {
            let got = got.unwrap_or_else(|| panic!("{}: {day} has no cost", file.display()));
            assert!(
                (got - want).abs() < 0.005,
                "{} {day}: {got} vs the oracle's {want}",
                file.display()
            );
        } else {
            assert_eq!(got, None, "{} {day}: all unpriced", file.display());
        }
    }
    unpriced.sort();
    unpriced.dedup();
    let listed: Vec<String> = serde_json::from_value(json["unpriced_models"].clone()).unwrap();
    assert_eq!(listed, unpriced, "{}", file.display());
}

#[test]
fn cost_equals_a_naive_computation_from_the_same_price_file() {
    let dir = tempfile::tempdir().unwrap();
    let table = price_file();
    let file = dir.path().join("prices.json");
    std::fs::write(&file, serde_json::to_vec(&table).unwrap()).unwrap();
    let prices = Arc::new(PriceTable::load(&file).unwrap());
    let mut files = Vec::new();
    for (i, (path, format)) in fixtures::all().into_iter().enumerate() {
        if format == Format::Pi {
            continue; // pi records its cost: checked below
        }
        let copy = dir.path().join(format!("f{i}.jsonl"));
        std::fs::copy(&path, &copy).unwrap();
        files.push((copy, format));
    }
    for seed in 0..3 {
        for format in [
            Format::ClaudeCode,
            Format::Codex,
            Format::Copilot,
            Format::Kimi,
        ] {
            let copy = dir.path().join(format!("g{seed}-{}.jsonl", format.name()));
            std::fs::write(&copy, generate::transcript(format, 300 + seed, 150)).unwrap();
            files.push((copy, format));
        }
    }
    let mut long = 0;
    let mut one_hour = 0;
    for (path, format) in &files {
        let e = oracle::expected(*format, &std::fs::read(path).unwrap());
        long += e.lifetime.long[6];
        one_hour += e.lifetime.cache_creation_1h;
        check(dir.path(), path, *format, &table, &prices);
    }
    // The inputs exercise what they are meant to.
    assert!(long > 0, "no long prompt in the inputs");
    assert!(one_hour > 0, "no 1-hour cache write in the inputs");
}

#[test]
fn pi_costs_are_the_recorded_ones_in_auto_and_unpriced_when_calculated_without_a_price() {
    let dir = tempfile::tempdir().unwrap();
    let prices = Arc::new(
        PriceTable::parse(
            b"{}",
            agentlog::transcript::PriceSource::File {
                path: "empty.json".into(),
            },
        )
        .unwrap(),
    );
    for (i, (path, format)) in fixtures::all().into_iter().enumerate() {
        if format != Format::Pi {
            continue;
        }
        let copy = dir.path().join(format!("p{i}.jsonl"));
        std::fs::copy(&path, &copy).unwrap();
        let recorded = oracle::expected(format, &std::fs::read(&copy).unwrap())
            .lifetime
            .cost;
        let run = |cost: CostMode| {
            let options = UsageOptions {
                open: OpenOptions {
                    index_dir: Some(dir.path().join("index")),
                    ..OpenOptions::default()
                },
                timezone: TimeZone::UTC,
                cost,
                prices: prices.clone(),
                snapshot: false,
                ..UsageOptions::default()
            };
            usage(std::slice::from_ref(&copy), &options, &|_, _| {})
        };
        let auto = run(CostMode::Auto);
        if auto.totals.messages > 0 {
            assert_eq!(
                auto.cost.cost.map(agentlog::transcript::Money::picodollars),
                Some(recorded)
            );
            assert!(auto.cost.unpriced_models.is_empty());
            let calculated = run(CostMode::Calculate);
            assert_eq!(calculated.cost.cost, None);
            assert_eq!(calculated.cost.unpriced_models, calculated.cost.models);
        }
    }
}

fn agentlog(args: &[&str]) -> (i32, Value) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_agentlog"))
        .args(args)
        .env("TZ", "UTC")
        .output()
        .unwrap();
    let json = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (out.status.code().unwrap(), json)
}

#[test]
fn the_cli_prices_reports_blocks_and_refuses_bad_prices_and_zones() {
    let dir = tempfile::tempdir().unwrap();
    let (code, json) = agentlog(&["pricing", "claude-opus-4.6", "sonnet", "--json"]);
    assert_eq!(code, 0);
    assert_eq!(json["source"]["kind"], "embedded");
    assert_eq!(json["models"][0]["price"]["key"], "claude-opus-4-6");
    assert_eq!(json["models"][1]["price"], Value::Null);

    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, r#"{"m": {"input_cost_per_token": "cheap"}}"#).unwrap();
    let (code, json) = agentlog(&["pricing", "--pricing", bad.to_str().unwrap(), "--json"]);
    assert_eq!((code, json["error"].as_str()), (2, Some("bad_pricing")));

    let (path, _) = fixtures::all()
        .into_iter()
        .find(|(p, _)| p.to_string_lossy().contains("258c7280"))
        .unwrap();
    let copy = dir.path().join("t/p/s.jsonl");
    std::fs::create_dir_all(copy.parent().unwrap()).unwrap();
    std::fs::copy(&path, &copy).unwrap();
    let index = dir.path().join("index");
    let run = |extra: &[&str]| {
        let mut args = vec!["usage", copy.to_str().unwrap(), "--index-dir"];
        args.push(index.to_str().unwrap());
        args.extend_from_slice(extra);
        args.push("--json");
        agentlog(&args)
    };
    let (code, json) = run(&["--timezone", "Nowhere/Special"]);
    assert_eq!((code, json["error"].as_str()), (2, Some("bad_input")));
    let (code, days) = run(&["--by", "day"]);
    assert_eq!(code, 0);
    let (_, blocks) = run(&["--by", "block"]);
    let (_, months) = run(&["--by", "month", "--timezone", "Asia/Tokyo"]);
    // Whatever the grouping, the totals and their cost are the same.
    for other in [&blocks, &months] {
        assert_eq!(other["cost_usd"], days["cost_usd"]);
        assert_eq!(other["totals"], days["totals"]);
    }
    assert!(days["cost_usd"].as_f64().unwrap() > 0.0);
    assert_eq!(months["timezone"], "Asia/Tokyo");
    let rows = blocks["rows"].as_array().unwrap();
    assert!(rows.iter().any(|r| r["is_gap"] == false));
    for r in rows {
        for field in ["start", "end", "is_active", "is_gap", "cost_usd", "models"] {
            assert!(r.get(field).is_some(), "{field} in {r}");
        }
    }
}

#[test]
fn the_live_view_finds_the_active_block_today_and_the_latest_session() {
    let dir = tempfile::tempdir().unwrap();
    let mut copies = Vec::new();
    for (i, (path, format)) in fixtures::all().into_iter().enumerate() {
        if format == Format::ClaudeCode && !path.to_string_lossy().contains("subagents") {
            let copy = dir.path().join(format!("p/f{i}.jsonl"));
            std::fs::create_dir_all(copy.parent().unwrap()).unwrap();
            std::fs::copy(&path, &copy).unwrap();
            copies.push(copy);
        }
    }
    let root = dir.path().join("p");
    let base = UsageOptions {
        open: OpenOptions {
            index_dir: Some(dir.path().join("index")),
            ..OpenOptions::default()
        },
        timezone: TimeZone::UTC,
        by: GroupBy::Block,
        ..UsageOptions::default()
    };
    let blocks = usage(std::slice::from_ref(&root), &base, &|_, _| {});
    let last = blocks
        .rows
        .iter()
        .rev()
        .find(|r| r.block.is_some())
        .unwrap();
    let b = last.block.clone().unwrap();
    // An hour after the last block's last activity, it is still active.
    let now = b
        .last_activity
        .checked_add(jiff::SignedDuration::from_hours(1))
        .unwrap();
    let options = UsageOptions {
        now: Some(now),
        ..base.clone()
    };
    let view = agentlog::transcript::live(std::slice::from_ref(&root), &options);
    let active = view.block.expect("an active block");
    assert_eq!(active.key, last.key);
    assert_eq!(active.tally, last.tally);
    let today = view.today.expect("usage today");
    assert_eq!(today.key, TimeZone::UTC.to_datetime(now).date().to_string());
    let session = view.session.expect("a session");
    let sessions = usage(
        std::slice::from_ref(&root),
        &UsageOptions {
            by: GroupBy::Session,
            ..base
        },
        &|_, _| {},
    );
    let latest = sessions.rows.iter().map(|r| r.last_activity).max().unwrap();
    assert_eq!(session.last_activity, latest);
    assert!(copies.len() > 1);
}
