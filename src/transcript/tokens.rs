//! [`Usage`]: token counts in named fields, the same for every format. Each reader turns its
//! format's own fields into these (the normalisations are in docs/TRANSCRIPTS.md, "Usage
//! fields"), so counts of different agents add up.

use serde::{Deserialize, Serialize};

/// Token counts under one set of names for every format.
///
/// * `input`: input tokens not read from the prompt cache;
/// * `output`: output tokens, reasoning included;
/// * `cache_creation`: input tokens written to the prompt cache;
/// * `cache_read`: input tokens read from the prompt cache;
/// * `reasoning`: how much of `output` was reasoning (thinking);
/// * `cache_creation_1h`: how much of `cache_creation` was written for one hour (Claude Code's
///   `ephemeral_1h_input_tokens`, priced above the 5-minute writes).
///
/// The total is not stored: [`Usage::total`] is `input + output + cache_creation + cache_read`,
/// so that equation holds on every value by construction (sums saturate at `u64::MAX` instead
/// of wrapping; each value a reader takes is at most 2^53). The two parts never exceed their
/// wholes in a value a reader makes; [`Usage::is_consistent`] checks it, and a value read
/// back (JSON or an index) that breaks it, or whose `total_tokens` is not the sum, is refused.
///
/// In JSON the fields are `input_tokens`, `output_tokens`, `cache_creation_tokens`,
/// `cache_read_tokens`, `reasoning_output_tokens`, `cache_creation_1h_tokens` and
/// `total_tokens`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(into = "Fields", try_from = "Fields")]
pub struct Usage {
    /// Input tokens not read from the cache.
    pub input: u64,
    /// Output tokens, reasoning included.
    pub output: u64,
    /// Input tokens written to the cache.
    pub cache_creation: u64,
    /// Input tokens read from the cache.
    pub cache_read: u64,
    /// The part of `output` that was reasoning.
    pub reasoning: u64,
    /// The part of `cache_creation` written for one hour.
    pub cache_creation_1h: u64,
}

/// How many counts [`Usage::counts`] holds.
pub(crate) const USAGE_COUNTS: usize = 6;

impl Usage {
    /// `input + output + cache_creation + cache_read`.
    pub fn total(&self) -> u64 {
        self.prompt().saturating_add(self.output)
    }

    /// The prompt: `input + cache_creation + cache_read` (what a request sent).
    pub fn prompt(&self) -> u64 {
        self.input
            .saturating_add(self.cache_creation)
            .saturating_add(self.cache_read)
    }

    /// Whether `reasoning <= output` and `cache_creation_1h <= cache_creation`.
    pub fn is_consistent(&self) -> bool {
        self.reasoning <= self.output && self.cache_creation_1h <= self.cache_creation
    }

    /// Whether every count is 0.
    pub fn is_zero(&self) -> bool {
        *self == Usage::default()
    }

    /// Adds `other` into `self`, saturating.
    pub fn add(&mut self, other: &Usage) {
        let sum = each(self.counts(), other.counts(), u64::saturating_add);
        *self = Usage::from_counts_unchecked(sum);
    }

    /// Takes `other` (a part of `self`) out of `self`, at most down to 0; the parts are then
    /// cut to their wholes, so the result stays consistent whatever `other` was.
    pub fn sub(&mut self, other: &Usage) {
        let rest = each(self.counts(), other.counts(), u64::saturating_sub);
        *self = Usage::from_counts_unchecked(rest).clamped();
    }

    /// The parts cut to their wholes.
    #[must_use]
    pub(crate) fn clamped(self) -> Usage {
        Usage {
            reasoning: self.reasoning.min(self.output),
            cache_creation_1h: self.cache_creation_1h.min(self.cache_creation),
            ..self
        }
    }

    /// The counts in a fixed order: input, output, cache creation, cache read, reasoning,
    /// cache creation 1h.
    pub(crate) fn counts(&self) -> [u64; USAGE_COUNTS] {
        [
            self.input,
            self.output,
            self.cache_creation,
            self.cache_read,
            self.reasoning,
            self.cache_creation_1h,
        ]
    }

    /// The value of [`Usage::counts`], not checked.
    pub(crate) fn from_counts_unchecked(c: [u64; USAGE_COUNTS]) -> Usage {
        let [input, output, created, read, reasoning, one_hour] = c;
        Usage {
            input,
            output,
            cache_creation: created,
            cache_read: read,
            reasoning,
            cache_creation_1h: one_hour,
        }
    }
}

/// `op` applied to `a` and `b` count by count.
pub(crate) fn each<const N: usize>(
    mut a: [u64; N],
    b: [u64; N],
    op: fn(u64, u64) -> u64,
) -> [u64; N] {
    for (x, y) in a.iter_mut().zip(b) {
        *x = op(*x, y);
    }
    a
}

/// The serialized form: the fields under their JSON names, with the total.
// The JSON names end alike.
#[allow(clippy::struct_field_names)]
#[derive(Serialize, Deserialize)]
struct Fields {
    input_tokens: u64,
    output_tokens: u64,
    cache_creation_tokens: u64,
    cache_read_tokens: u64,
    reasoning_output_tokens: u64,
    cache_creation_1h_tokens: u64,
    total_tokens: u64,
}

impl From<Usage> for Fields {
    fn from(u: Usage) -> Fields {
        Fields {
            input_tokens: u.input,
            output_tokens: u.output,
            cache_creation_tokens: u.cache_creation,
            cache_read_tokens: u.cache_read,
            reasoning_output_tokens: u.reasoning,
            cache_creation_1h_tokens: u.cache_creation_1h,
            total_tokens: u.total(),
        }
    }
}

impl TryFrom<Fields> for Usage {
    type Error = String;

    fn try_from(f: Fields) -> Result<Usage, String> {
        let usage = Usage {
            input: f.input_tokens,
            output: f.output_tokens,
            cache_creation: f.cache_creation_tokens,
            cache_read: f.cache_read_tokens,
            reasoning: f.reasoning_output_tokens,
            cache_creation_1h: f.cache_creation_1h_tokens,
        };
        if usage.total() != f.total_tokens {
            return Err(format!(
                "total_tokens {} is not input + output + cache creation + cache read ({})",
                f.total_tokens,
                usage.total()
            ));
        }
        if !usage.is_consistent() {
            return Err("a part (reasoning, 1-hour cache creation) exceeds its whole".to_owned());
        }
        Ok(usage)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(c: [u64; USAGE_COUNTS]) -> Usage {
        Usage::from_counts_unchecked(c)
    }

    #[test]
    fn the_total_is_the_sum_of_the_four_and_json_carries_it() {
        let u = usage([1, 20, 300, 4000, 5, 60]);
        assert_eq!(u.total(), 4321);
        assert_eq!(u.prompt(), 4301);
        let v = serde_json::to_value(u).unwrap();
        assert_eq!(v["total_tokens"], 4321);
        assert_eq!(v["reasoning_output_tokens"], 5);
        assert_eq!(serde_json::from_value::<Usage>(v).unwrap(), u);
    }

    #[test]
    fn a_value_read_back_that_does_not_add_up_is_refused() {
        let mut v = serde_json::to_value(usage([1, 2, 3, 4, 0, 0])).unwrap();
        v["total_tokens"] = 11.into();
        assert!(serde_json::from_value::<Usage>(v.clone()).is_err());
        v["total_tokens"] = 10.into();
        v["reasoning_output_tokens"] = 3.into();
        assert!(serde_json::from_value::<Usage>(v).is_err());
        let bytes = postcard::to_stdvec(&usage([1, 2, 3, 4, 2, 3])).unwrap();
        assert!(postcard::from_bytes::<Usage>(&bytes).is_ok());
    }

    #[test]
    fn sums_saturate_and_differences_stay_consistent() {
        let mut u = usage([u64::MAX - 1, 0, 0, 0, 0, 0]);
        u.add(&usage([5, 1, 0, 0, 1, 0]));
        assert_eq!((u.input, u.output, u.reasoning), (u64::MAX, 1, 1));
        u.sub(&usage([0, 1, 0, 0, 0, 0]));
        assert_eq!((u.output, u.reasoning), (0, 0));
        assert!(u.is_consistent());
    }
}
