//! A tally in each format's own terms: the [`Slot`]s a format's figures stand for, and one
//! table of every format's own names for them (the answers' native fields, the export's
//! per-line columns). The readers say which of a line's fields fills which slot.

use super::format::Format;
use super::tally::Tally;

/// What a figure in a format's own terms is, in terms of a [`Tally`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Slot {
    /// Input not read from the cache.
    Input,
    /// Input including what was read from the cache (Codex's `input_tokens`).
    InputWithCacheRead,
    /// Output, reasoning included.
    Output,
    /// Output without its reasoning part (`OpenCode`'s `tokens.output`).
    OutputWithoutReasoning,
    /// The reasoning part of output.
    Reasoning,
    /// Input written to the cache.
    CacheCreation,
    /// Input read from the cache.
    CacheRead,
    /// The format's own total.
    Total,
    /// The recorded cost, in dollars.
    Cost,
    /// Messages or usage events.
    Messages,
}

/// How many [`Slot`]s there are.
pub(crate) const SLOTS: usize = 10;

/// A figure of a tally in a format's own terms.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum NativeValue {
    /// A count.
    Count(u64),
    /// An amount in dollars.
    Dollars(f64),
}

impl serde::Serialize for NativeValue {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            NativeValue::Count(n) => serializer.serialize_u64(*n),
            NativeValue::Dollars(x) => serializer.serialize_f64(*x),
        }
    }
}

impl Slot {
    /// This figure of a tally.
    pub(crate) fn of(self, t: &Tally) -> NativeValue {
        let u = &t.usage;
        NativeValue::Count(match self {
            Slot::Input => u.input,
            Slot::InputWithCacheRead => u.input.saturating_add(u.cache_read),
            Slot::Output => u.output,
            Slot::OutputWithoutReasoning => u.output.saturating_sub(u.reasoning),
            Slot::Reasoning => u.reasoning,
            Slot::CacheCreation => u.cache_creation,
            Slot::CacheRead => u.cache_read,
            Slot::Total => u.total(),
            Slot::Messages => t.messages,
            Slot::Cost => return NativeValue::Dollars(t.cost.dollars()),
        })
    }
}

/// A line's own figures by [`Slot`] (not deduplicated, not normalised: what the line says).
pub(crate) type SlotValues = [Option<u64>; SLOTS];

/// Every format's own names for a tally's figures, in its order.
pub(crate) fn fields(format: Format) -> &'static [(&'static str, Slot)] {
    match format {
        Format::ClaudeCode => &[
            ("input_tokens", Slot::Input),
            ("output_tokens", Slot::Output),
            ("cache_creation_input_tokens", Slot::CacheCreation),
            ("cache_read_input_tokens", Slot::CacheRead),
            ("total_tokens", Slot::Total),
            ("messages", Slot::Messages),
        ],
        Format::Codex => &[
            ("input_tokens", Slot::InputWithCacheRead),
            ("cached_input_tokens", Slot::CacheRead),
            ("output_tokens", Slot::Output),
            ("reasoning_output_tokens", Slot::Reasoning),
            ("total_tokens", Slot::Total),
            ("usage_events", Slot::Messages),
        ],
        Format::Pi => &[
            ("input", Slot::Input),
            ("output", Slot::Output),
            ("cacheRead", Slot::CacheRead),
            ("cacheWrite", Slot::CacheCreation),
            ("totalTokens", Slot::Total),
            ("cost_total", Slot::Cost),
            ("messages", Slot::Messages),
        ],
        Format::Gemini => &[
            ("input_and_tool", Slot::InputWithCacheRead),
            ("cached", Slot::CacheRead),
            ("output_and_thoughts", Slot::Output),
            ("thoughts", Slot::Reasoning),
            ("total", Slot::Total),
            ("messages", Slot::Messages),
        ],
        Format::Qwen => &[
            ("promptTokenCount", Slot::InputWithCacheRead),
            ("candidatesTokenCount", Slot::Output),
            ("thoughtsTokenCount", Slot::Reasoning),
            ("cachedContentTokenCount", Slot::CacheRead),
            ("totalTokenCount", Slot::Total),
            ("messages", Slot::Messages),
        ],
        Format::Copilot => &[
            ("inputTokens", Slot::InputWithCacheRead),
            ("outputTokens", Slot::Output),
            ("cacheReadTokens", Slot::CacheRead),
            ("cacheWriteTokens", Slot::CacheCreation),
            ("reasoningTokens", Slot::Reasoning),
            ("requests", Slot::Messages),
        ],
        Format::OpenCode => &[
            ("input", Slot::Input),
            ("output", Slot::OutputWithoutReasoning),
            ("reasoning", Slot::Reasoning),
            ("cache_read", Slot::CacheRead),
            ("cache_write", Slot::CacheCreation),
            ("total", Slot::Total),
            ("cost", Slot::Cost),
            ("messages", Slot::Messages),
        ],
        Format::Kimi => &[
            ("inputOther", Slot::Input),
            ("output", Slot::Output),
            ("inputCacheRead", Slot::CacheRead),
            ("inputCacheCreation", Slot::CacheCreation),
            ("usage_records", Slot::Messages),
        ],
    }
}

/// A tally in a format's own names, in its order.
pub fn native(format: Format, tally: &Tally) -> Vec<(&'static str, NativeValue)> {
    fields(format)
        .iter()
        .map(|(name, slot)| (*name, slot.of(tally)))
        .collect()
}

/// A tally's figures by slot, as its format names them (`None` where it names none).
pub(crate) fn native_slots(format: Format, tally: &Tally) -> SlotValues {
    let mut out = SlotValues::default();
    for (_, slot) in fields(format) {
        if let (Some(v), NativeValue::Count(n)) = (out.get_mut(*slot as usize), slot.of(tally)) {
            *v = Some(n);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_format_names_each_of_its_slots_once_and_counts_its_messages() {
        for f in Format::ALL {
            let mut slots: Vec<usize> = fields(f).iter().map(|(_, s)| *s as usize).collect();
            assert!(fields(f).iter().any(|(_, s)| *s == Slot::Messages), "{f}");
            let n = slots.len();
            slots.sort_unstable();
            slots.dedup();
            assert_eq!(slots.len(), n, "{f} names a slot twice");
            let names = native(f, &Tally::default());
            assert_eq!(names.len(), n, "{f}");
        }
    }
}
