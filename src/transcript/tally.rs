//! Token tallies, and how each format names their fields.

use serde::{Deserialize, Serialize};

use super::format::Format;

/// Token counts summed over counted messages (Claude Code, pi) or usage events (Codex).
///
/// The five counters mean, by format:
///
/// | slot | Claude Code | Codex | pi |
/// |---|---|---|---|
/// | 0 | `input_tokens` | `input_tokens` | `input` |
/// | 1 | `output_tokens` | `cached_input_tokens` | `output` |
/// | 2 | `cache_creation_input_tokens` | `output_tokens` | `cacheRead` |
/// | 3 | `cache_read_input_tokens` | `reasoning_output_tokens` | `cacheWrite` |
/// | 4 | `total_tokens` (the sum of 0-3) | `total_tokens` | `totalTokens` |
///
/// `cost` is pi's `cost.total` (0 for the others); `events` counts messages (Claude Code, pi)
/// or usage events (Codex).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Tally {
    /// The five token counters, named per format as above.
    pub tokens: [u64; 5],
    /// The summed cost (pi only).
    pub cost: f64,
    /// Messages or usage events counted.
    pub events: u64,
}

impl Tally {
    /// Adds `other` into `self`.
    pub fn add(&mut self, other: &Tally) {
        for (a, b) in self.tokens.iter_mut().zip(other.tokens) {
            *a = a.saturating_add(b);
        }
        self.cost += other.cost;
        self.events = self.events.saturating_add(other.events);
    }

    /// Takes back the tokens of `other` (a message's previous winning line), leaving `events`
    /// and `cost` as they are.
    pub(crate) fn sub_tokens(&mut self, other: &Tally) {
        for (a, b) in self.tokens.iter_mut().zip(other.tokens) {
            *a = a.saturating_sub(b);
        }
    }

    /// Whether nothing was counted.
    pub fn is_empty(&self) -> bool {
        *self == Tally::default()
    }

    /// The field names and values in `format`'s own names, in the order above, then the cost
    /// (pi only) and the event count.
    pub fn fields(&self, format: Format) -> Vec<(&'static str, serde_json::Value)> {
        let names = match format {
            Format::ClaudeCode => [
                "input_tokens",
                "output_tokens",
                "cache_creation_input_tokens",
                "cache_read_input_tokens",
                "total_tokens",
            ],
            Format::Codex => [
                "input_tokens",
                "cached_input_tokens",
                "output_tokens",
                "reasoning_output_tokens",
                "total_tokens",
            ],
            Format::Pi => ["input", "output", "cacheRead", "cacheWrite", "totalTokens"],
        };
        let mut out: Vec<(&'static str, serde_json::Value)> = names
            .into_iter()
            .zip(self.tokens)
            .map(|(name, value)| (name, value.into()))
            .collect();
        if format == Format::Pi {
            out.push(("cost_total", self.cost.into()));
        }
        let events = match format {
            Format::Codex => "usage_events",
            Format::ClaudeCode | Format::Pi => "messages",
        };
        out.push((events, self.events.into()));
        out
    }

    /// The tally as a JSON object in `format`'s own field names.
    pub fn to_json(&self, format: Format) -> serde_json::Value {
        serde_json::Value::Object(
            self.fields(format)
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v))
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_use_each_formats_names() {
        let t = Tally {
            tokens: [1, 2, 3, 4, 10],
            cost: 0.5,
            events: 2,
        };
        let claude = t.to_json(Format::ClaudeCode);
        assert_eq!(claude["cache_read_input_tokens"], 4);
        assert_eq!(claude["messages"], 2);
        assert!(claude.get("cost_total").is_none());
        let codex = t.to_json(Format::Codex);
        assert_eq!(codex["reasoning_output_tokens"], 4);
        assert_eq!(codex["usage_events"], 2);
        let pi = t.to_json(Format::Pi);
        assert_eq!(pi["cacheWrite"], 4);
        assert_eq!(pi["cost_total"], 0.5);
        assert_eq!(pi["totalTokens"], 10);
    }

    #[test]
    fn sums_saturate_instead_of_wrapping() {
        let mut t = Tally {
            tokens: [u64::MAX - 1, 0, 0, 0, 0],
            ..Tally::default()
        };
        t.add(&Tally {
            tokens: [5, 1, 0, 0, 0],
            cost: 0.0,
            events: 1,
        });
        assert_eq!(t.tokens[0], u64::MAX);
        t.sub_tokens(&Tally {
            tokens: [0, 2, 0, 0, 0],
            ..Tally::default()
        });
        assert_eq!(t.tokens[1], 0);
        assert_eq!(t.events, 1);
    }
}
