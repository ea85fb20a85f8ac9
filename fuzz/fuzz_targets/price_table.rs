//! Arbitrary bytes as a price file (`--pricing FILE`, `LiteLLM`'s format): parsing must never
//! panic; an accepted table must come from a JSON object, hold every rate within $1 per token,
//! find each of its models under its own key, and price a tally as the naive sum of its parts
//! at the rates shown.
#![no_main]

use agentlog::transcript::{Money, PriceSource, PriceTable, Tally, Usage};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let source = PriceSource::File {
        path: "fuzz.json".into(),
    };
    let Ok(table) = PriceTable::parse(data, source) else {
        return;
    };
    let v: serde_json::Value = serde_json::from_slice(data).expect("an accepted table is JSON");
    assert!(v.is_object());
    let usage = Usage {
        input: 1_000,
        output: 200,
        cache_creation: 300,
        cache_read: 4_000,
        reasoning: 50,
        cache_creation_1h: 100,
    };
    let tally = Tally::message(usage, Money::default());
    for model in table.models() {
        let b = &model.base;
        for rate in [
            b.input,
            b.output,
            b.cache_creation,
            b.cache_creation_1h,
            b.cache_read,
        ] {
            assert!(rate <= Money::PER_DOLLAR);
        }
        assert_eq!(table.lookup(&model.key).map(|m| &m.key), Some(&model.key));
        let naive = u128::from(b.input) * 1_000
            + u128::from(b.output) * 200
            + u128::from(b.cache_creation) * 200
            + u128::from(b.cache_creation_1h) * 100
            + u128::from(b.cache_read) * 4_000;
        assert_eq!(u128::from(model.cost(&tally).picodollars()), naive);
    }
});
