use super::*;
use crate::transcript::tokens::Usage;

fn table(json: &str) -> Result<PriceTable, PriceError> {
    PriceTable::parse(
        json.as_bytes(),
        PriceSource::File {
            path: PathBuf::from("t.json"),
        },
    )
}

#[test]
fn the_embedded_table_parses_and_prices_the_agents_models() {
    let t = PriceTable::embedded();
    assert!(t.models().count() > 200);
    for (name, key) in [
        ("claude-opus-4-6", "claude-opus-4-6"),
        ("claude-sonnet-4-5-20250929", "claude-sonnet-4-5-20250929"),
        ("claude-opus-4.6", "claude-opus-4-6"),
        ("gpt-5.3-codex", "gpt-5.3-codex"),
        ("gemini-2.5-pro", "gemini-2.5-pro"),
        ("moonshot-ai/kimi-k2.7-code", "moonshot/kimi-k2.7-code"),
        ("kimi-k2.7-code", "moonshot/kimi-k2.7-code"),
        ("Claude-Opus-4-6", "claude-opus-4-6"),
    ] {
        assert_eq!(t.lookup(name).map(|p| p.key.as_str()), Some(key), "{name}");
    }
    assert!(t.lookup("sonnet").is_none());
    assert!(t.lookup("coder-model").is_none());
    let opus = t.lookup("claude-sonnet-4-5").expect("sonnet 4.5");
    assert_eq!(opus.base.input, 3_000_000);
    assert_eq!(opus.base.cache_creation_1h, 6_000_000);
}

#[test]
fn a_cost_is_the_naive_sum_and_a_long_prompt_takes_the_tier_for_every_token() {
    let t = table(
        r#"{"m": {"input_cost_per_token": 3e-06, "output_cost_per_token": 1.5e-05,
        "cache_creation_input_token_cost": 3.75e-06, "cache_creation_input_token_cost_above_1hr": 6e-06,
        "cache_read_input_token_cost": 3e-07, "input_cost_per_token_above_200k_tokens": 6e-06,
        "output_cost_per_token_above_200k_tokens": 2.25e-05}}"#,
    )
    .unwrap();
    let m = t.lookup("m").unwrap();
    let short = Usage {
        input: 10,
        output: 100,
        cache_creation: 1000,
        cache_creation_1h: 400,
        cache_read: 5000,
        reasoning: 0,
    };
    // 10*3 + 100*15 + 600*3.75 + 400*6 + 5000*0.3 microdollars
    let t1 = Tally::message(short, Money::default());
    assert_eq!(
        m.cost(&t1).picodollars(),
        (30 + 1500 + 2250 + 2400 + 1500) * 1_000_000
    );
    let long = Usage {
        input: 250_000,
        output: 10,
        ..Usage::default()
    };
    let t2 = Tally::message(long, Money::default());
    // every token at the tier: 250000*6 + 10*22.5; the cache rates fall back to the base
    assert_eq!(
        m.cost(&t2).picodollars(),
        250_000 * 6_000_000 + 10 * 22_500_000
    );
    let mut both = t1;
    both.add(&t2);
    assert_eq!(m.cost(&both), m.cost(&t1).plus(m.cost(&t2)));
}

#[test]
fn missing_cache_rates_fall_back_and_bad_costs_are_refused_by_name() {
    let t = table(r#"{"a": {"input_cost_per_token": 1e-06}, "img": {"output_cost_per_image": 1}}"#)
        .unwrap();
    let a = t.lookup("a").unwrap();
    assert_eq!(
        (
            a.base.cache_read,
            a.base.cache_creation,
            a.base.cache_creation_1h,
            a.base.output
        ),
        (1_000_000, 1_000_000, 1_000_000, 0)
    );
    assert!(t.lookup("img").is_none());
    for (json, field) in [
        (
            r#"{"a": {"input_cost_per_token": "1"}}"#,
            "input_cost_per_token",
        ),
        (
            r#"{"a": {"input_cost_per_token": -1e-06}}"#,
            "input_cost_per_token",
        ),
        (
            r#"{"a": {"input_cost_per_token": 1, "output_cost_per_token": 2}}"#,
            "output_cost_per_token",
        ),
        (r#"{"a": 3}"#, "entry"),
    ] {
        match table(json) {
            Err(PriceError::BadPrice {
                model, field: f, ..
            }) => {
                assert_eq!((model.as_str(), f.as_str()), ("a", field), "{json}");
            }
            other => panic!("{json}: {other:?}"),
        }
    }
    assert!(matches!(table("[1]"), Err(PriceError::NotATable { .. })));
    assert!(matches!(table("{"), Err(PriceError::NotATable { .. })));
    let missing = PriceTable::load(Path::new("/nonexistent/prices.json"));
    assert!(matches!(missing, Err(PriceError::Io { .. })));
}

#[test]
fn aliases_are_tried_in_order() {
    assert_eq!(
        aliases("Anthropic/Claude-Opus-4.6-20260101"),
        [
            "Anthropic/Claude-Opus-4.6-20260101",
            "anthropic/claude-opus-4.6-20260101",
            "claude-opus-4.6-20260101",
            "Anthropic/Claude-Opus-4-6-20260101",
            "anthropic/claude-opus-4-6-20260101",
            "claude-opus-4-6-20260101",
            "Anthropic/Claude-Opus-4.6",
            "anthropic/claude-opus-4.6",
            "claude-opus-4.6",
            "Anthropic/Claude-Opus-4-6",
            "anthropic/claude-opus-4-6",
            "claude-opus-4-6",
        ]
    );
    assert_eq!(dashed("gpt-5.3-codex"), "gpt-5-3-codex");
    assert_eq!(dashed("a.b1.2"), "a.b1-2");
}

fn any_tally() -> impl proptest::strategy::Strategy<Value = Tally> {
    use proptest::prelude::*;
    (
        0u64..400_000,
        0u64..100_000,
        0u64..300_000,
        0u64..300_000,
        any::<u64>(),
        any::<u64>(),
    )
        .prop_map(|(input, output, created, read, r, h)| {
            let usage = Usage {
                input,
                output,
                cache_creation: created,
                cache_read: read,
                reasoning: r % (output + 1),
                cache_creation_1h: h % (created + 1),
            };
            Tally::message(usage, Money::default())
        })
}

proptest::proptest! {
    /// Pricing is exact and linear: the cost of a sum of messages is the sum of their costs,
    /// whatever their sizes (long prompts included), and equals a naive computation in u128.
    #[test]
    fn the_cost_of_a_sum_is_the_sum_of_the_costs(
        tallies in proptest::collection::vec(any_tally(), 1..20)
    ) {
        let t = PriceTable::embedded();
        // A model with a long-prompt tier, so both branches are taken.
        let m = t.lookup("gemini-2.5-pro").unwrap();
        proptest::prop_assert!(m.long_prompt.is_some());
        let mut sum = Tally::default();
        let mut each = 0u128;
        for x in &tallies {
            sum.add(x);
            let rates = if x.usage.prompt() > crate::transcript::tally::LONG_PROMPT {
                m.long_prompt.unwrap_or(m.base)
            } else {
                m.base
            };
            let u = &x.usage;
            let naive = u128::from(u.input) * u128::from(rates.input)
                + u128::from(u.output) * u128::from(rates.output)
                + u128::from(u.cache_creation - u.cache_creation_1h) * u128::from(rates.cache_creation)
                + u128::from(u.cache_creation_1h) * u128::from(rates.cache_creation_1h)
                + u128::from(u.cache_read) * u128::from(rates.cache_read);
            proptest::prop_assert_eq!(u128::from(m.cost(x).picodollars()), naive);
            each += naive;
        }
        proptest::prop_assert_eq!(u128::from(m.cost(&sum).picodollars()), each);
    }
}

#[test]
fn fields_not_read_are_still_checked_as_json_and_the_rates_are_those_of_the_value() {
    // Accepted exactly when serde_json's `Value` accepts the bytes, whatever the fields not
    // read hold (nested objects and arrays, escapes, numbers past f64).
    let rates = r#""input_cost_per_token": 1e-06, "output_cost_per_token": 2e-06"#;
    for (json, ok) in [
        (
            format!(r#"{{"m": {{{rates}, "x": {{"a": [1, {{"b": null}}], "c": "\u00e9"}}}}}}"#),
            true,
        ),
        (
            format!(r#"{{"m": {{{rates}, "x": [true, false, -1, 1.5, "s"]}}}}"#),
            true,
        ),
        (format!(r#"{{"m": {{{rates}, "x": 1e400}}}}"#), false),
        (format!(r#"{{"m": {{{rates}, "x": "\ud800"}}}}"#), false),
        (
            format!(r#"{{"m": {{{rates}, "x": {{"\ud800": 1}}}}}}"#),
            false,
        ),
        (format!(r#"{{"m": {{{rates}}}, "n": [1e400]}}"#), false),
        (
            format!(r#"{{"m": {{{rates}, "input_cost_per_token": 5e-06}}}}"#),
            true,
        ),
    ] {
        let value = serde_json::from_slice::<serde_json::Value>(json.as_bytes()).is_ok();
        assert_eq!(value, ok, "{json}");
        let parsed = table(&json);
        if ok {
            let m = parsed.unwrap();
            let m = m.lookup("m").unwrap();
            // A repeated field: the last one, as in a `Value`.
            let input = if json.contains("5e-06") {
                5_000_000
            } else {
                1_000_000
            };
            assert_eq!((m.base.input, m.base.output), (input, 2_000_000), "{json}");
        } else {
            assert!(parsed.is_err(), "{json}");
        }
    }
    for (json, message) in [
        ("[1, 2]", "the top level is not an object"),
        (r#"{"m": [1, {"a": 2}]}"#, "entry is not an object"),
        (r#"{"m": "text"}"#, "entry is not an object"),
    ] {
        let e = table(json).unwrap_err().to_string();
        assert!(e.contains(message), "{json}: {e}");
    }
}

#[test]
fn the_embedded_entries_for_some_models_price_them_as_the_whole_table_does() {
    let all = PriceTable::embedded();
    let mut names: Vec<String> = all.models().map(|m| m.key.clone()).collect();
    names.extend(
        [
            "claude-opus-4.6",
            "Claude-Opus-4-6",
            "claude-sonnet-4-5-20250929",
            "moonshot-ai/kimi-k2.7-code",
            "kimi-k2.7-code",
            "gpt-5.3-codex",
            "coder-model",
            "unknown",
            "",
        ]
        .map(str::to_owned),
    );
    for name in &names {
        let some = PriceTable::embedded_for([name.as_str()]);
        assert_eq!(some.lookup(name), all.lookup(name), "{name}");
        assert_eq!(some.source, all.source);
        // Only what a lookup of these names can reach.
        assert!(
            some.models().count() <= 3,
            "{name}: {}",
            some.models().count()
        );
    }
    let two = PriceTable::embedded_for(["claude-opus-4-6", "gpt-5.3-codex"]);
    assert!(two.lookup("claude-opus-4-6").is_some() && two.lookup("gpt-5.3-codex").is_some());
    assert!(two.lookup("gemini-2.5-pro").is_none());
}
