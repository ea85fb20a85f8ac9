//! [`Tally`]: what a set of messages adds up to (their [`Usage`], the part of it from long
//! prompts, the cost the transcript recorded, how many they were), and [`Money`], the exact
//! unit costs are kept in.

use serde::de::Deserializer;
use serde::ser::Serializer;
use serde::{Deserialize, Serialize};

use super::tokens::{USAGE_COUNTS, Usage, each};

/// A prompt larger than this many tokens (input + cache creation + cache read) is a long
/// prompt: some models price every token of such a request at higher rates (`LiteLLM`'s
/// `*_above_200k_tokens`), so a tally keeps the usage of those requests apart.
pub const LONG_PROMPT: u64 = 200_000;

/// An amount of money in exact units: picodollars (10^-12 US dollars). Every price per token
/// in use is a whole number of them, so sums of costs are exact (no float accumulation).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct Money(u64);

impl Money {
    /// Picodollars in a dollar.
    pub const PER_DOLLAR: u64 = 1_000_000_000_000;
    /// The largest amount one recorded cost may be: 2^53 picodollars (about $9,007), the same
    /// ceiling as a token value's, so sums stay far from overflowing.
    pub const MAX_RECORDED: Money = Money(1 << 53);

    /// An amount in picodollars.
    pub fn from_picodollars(n: u64) -> Money {
        Money(n)
    }

    /// The amount in picodollars.
    pub fn picodollars(self) -> u64 {
        self.0
    }

    /// A recorded cost in dollars, rounded to the nearest picodollar; `None` if it is not a
    /// finite amount from 0 up to [`Money::MAX_RECORDED`].
    // Checked to be finite, non-negative and at most 2^53 before the cast, so it is exact.
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss
    )]
    pub fn from_dollars(dollars: f64) -> Option<Money> {
        let units = (dollars * Money::PER_DOLLAR as f64).round();
        (units.is_finite() && units >= 0.0 && units <= Money::MAX_RECORDED.0 as f64)
            .then_some(Money(units as u64))
    }

    /// The amount in dollars (the nearest `f64`).
    // Display only: a sum above 2^53 picodollars rounds, as any float would.
    #[allow(clippy::cast_precision_loss)]
    pub fn dollars(self) -> f64 {
        self.0 as f64 / Money::PER_DOLLAR as f64
    }

    /// `self + other`, saturating.
    #[must_use]
    pub fn plus(self, other: Money) -> Money {
        Money(self.0.saturating_add(other.0))
    }
}

/// What counted messages (Claude Code, pi) or usage events (Codex) add up to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Tally {
    /// Their tokens.
    pub usage: Usage,
    /// The part of `usage` from requests whose prompt was above [`LONG_PROMPT`].
    pub long_prompt: Usage,
    /// The cost the transcript recorded for them (pi's `cost.total`; zero for the others).
    pub cost: Money,
    /// How many messages or usage events.
    pub messages: u64,
}

/// How many counts [`Tally::counts`] holds.
pub(crate) const TALLY_COUNTS: usize = 2 * USAGE_COUNTS + 2;

impl Tally {
    /// The tally of one message or usage event: its usage (also in
    /// [`long_prompt`](Tally::long_prompt) when its prompt is long) and its recorded cost.
    pub fn message(usage: Usage, cost: Money) -> Tally {
        Tally {
            usage,
            long_prompt: if usage.prompt() > LONG_PROMPT {
                usage
            } else {
                Usage::default()
            },
            cost,
            messages: 1,
        }
    }

    /// Adds `other` into `self`, saturating.
    pub fn add(&mut self, other: &Tally) {
        *self =
            Tally::from_counts_unchecked(each(self.counts(), other.counts(), u64::saturating_add));
    }

    /// Takes `other` (a part of `self`: messages counted in it) out of `self`, each count at
    /// most down to 0; the result stays consistent whatever `other` was.
    pub fn sub(&mut self, other: &Tally) {
        let rest = each(self.counts(), other.counts(), u64::saturating_sub);
        *self = Tally::from_counts_unchecked(rest).clamped();
    }

    /// Whether nothing was counted.
    pub fn is_empty(&self) -> bool {
        *self == Tally::default()
    }

    /// Whether the usage holds together ([`Usage::is_consistent`]) and the long-prompt part is
    /// part of it, count by count.
    pub fn is_consistent(&self) -> bool {
        let (whole, part) = (self.usage.counts(), self.long_prompt.counts());
        self.usage.is_consistent()
            && self.long_prompt.is_consistent()
            && whole.iter().zip(part).all(|(w, p)| p <= *w)
    }

    /// The parts cut to their wholes.
    fn clamped(self) -> Tally {
        let usage = self.usage.clamped();
        let long = each(self.long_prompt.counts(), usage.counts(), u64::min);
        Tally {
            usage,
            long_prompt: Usage::from_counts_unchecked(long).clamped(),
            ..self
        }
    }

    /// Every count in a fixed order: the usage's, the long-prompt part's, the cost in
    /// picodollars, the messages. A tally's difference from another is taken count by count
    /// (the usage snapshot's corrections).
    pub(crate) fn counts(&self) -> [u64; TALLY_COUNTS] {
        let mut out = [0; TALLY_COUNTS];
        let (usage, long) = out.split_at_mut(USAGE_COUNTS);
        usage.copy_from_slice(&self.usage.counts());
        if let Some(long) = long.get_mut(..USAGE_COUNTS) {
            long.copy_from_slice(&self.long_prompt.counts());
        }
        let [.., cost, messages] = &mut out;
        (*cost, *messages) = (self.cost.0, self.messages);
        out
    }

    fn from_counts_unchecked(c: [u64; TALLY_COUNTS]) -> Tally {
        let part = |from: usize| {
            let mut out = [0; USAGE_COUNTS];
            if let Some(slice) = c.get(from..from + USAGE_COUNTS) {
                out.copy_from_slice(slice);
            }
            Usage::from_counts_unchecked(out)
        };
        let [.., cost, messages] = c;
        Tally {
            usage: part(0),
            long_prompt: part(USAGE_COUNTS),
            cost: Money(cost),
            messages,
        }
    }

    /// The tally of [`Tally::counts`], if it is consistent.
    pub(crate) fn from_counts(c: [u64; TALLY_COUNTS]) -> Option<Tally> {
        Some(Tally::from_counts_unchecked(c)).filter(Tally::is_consistent)
    }
}

/// A tally in JSON: the usage's fields, then `long_prompt` (a usage object, left out when
/// zero), `cost_total` (the recorded cost in dollars) and `messages`.
#[derive(Serialize, Deserialize)]
struct Json {
    #[serde(flatten)]
    usage: Usage,
    #[serde(default, skip_serializing_if = "Usage::is_zero")]
    long_prompt: Usage,
    cost_total: f64,
    messages: u64,
}

// Readable formats (JSON, Python) get named fields; the index's binary form is the counts,
// checked on the way back in.
impl Serialize for Tally {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if serializer.is_human_readable() {
            Json {
                usage: self.usage,
                long_prompt: self.long_prompt,
                cost_total: self.cost.dollars(),
                messages: self.messages,
            }
            .serialize(serializer)
        } else {
            self.counts().serialize(serializer)
        }
    }
}

impl<'de> Deserialize<'de> for Tally {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Tally, D::Error> {
        use serde::de::Error;
        let tally = if deserializer.is_human_readable() {
            let json = Json::deserialize(deserializer)?;
            let cost = Money::from_dollars(json.cost_total)
                .ok_or_else(|| D::Error::custom("cost_total is not an amount"))?;
            Tally {
                usage: json.usage,
                long_prompt: json.long_prompt,
                cost,
                messages: json.messages,
            }
        } else {
            Tally::from_counts_unchecked(<[u64; TALLY_COUNTS]>::deserialize(deserializer)?)
        };
        if tally.is_consistent() {
            Ok(tally)
        } else {
            Err(D::Error::custom("a tally whose parts exceed their wholes"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(input: u64, output: u64, cache_read: u64) -> Usage {
        Usage {
            input,
            output,
            cache_read,
            ..Usage::default()
        }
    }

    #[test]
    fn a_long_prompt_is_kept_apart_and_sums_carry_it() {
        let short = Tally::message(usage(10, 5, 1000), Money::default());
        let long = Tally::message(usage(10, 5, LONG_PROMPT), Money::from_picodollars(7));
        assert!(short.long_prompt.is_zero());
        assert_eq!(long.long_prompt, long.usage);
        let mut t = short;
        t.add(&long);
        assert_eq!(t.usage.total(), short.usage.total() + long.usage.total());
        assert_eq!(t.long_prompt, long.usage);
        assert_eq!((t.messages, t.cost.picodollars()), (2, 7));
        t.sub(&long);
        assert_eq!(t, short);
    }

    #[test]
    fn both_encodings_round_trip_and_refuse_what_does_not_hold_together() {
        let t = Tally::message(usage(1, 2, LONG_PROMPT + 1), Money::from_picodollars(250));
        let bytes = postcard::to_stdvec(&t).unwrap();
        assert_eq!(postcard::from_bytes::<Tally>(&bytes).unwrap(), t);
        let json = serde_json::to_value(t).unwrap();
        assert_eq!(json["total_tokens"], LONG_PROMPT + 4);
        assert_eq!(json["long_prompt"]["total_tokens"], LONG_PROMPT + 4);
        assert_eq!(serde_json::from_value::<Tally>(json).unwrap(), t);
        let mut counts = t.counts();
        counts[USAGE_COUNTS] = 2; // a long-prompt input above the whole input
        let bytes = postcard::to_stdvec(&counts).unwrap();
        assert!(postcard::from_bytes::<Tally>(&bytes).is_err());
        assert_eq!(Tally::from_counts(counts), None);
    }

    fn any_usage() -> impl proptest::strategy::Strategy<Value = Usage> {
        use proptest::prelude::*;
        // Wholes first, then parts within them; some values near the top of u64.
        let count = prop_oneof![
            0u64..1_000_000,
            (u64::MAX - 10)..=u64::MAX,
            0u64..=(1 << 53)
        ];
        (
            count.clone(),
            count.clone(),
            count.clone(),
            count,
            any::<u64>(),
            any::<u64>(),
        )
            .prop_map(|(input, output, cache_creation, cache_read, r, h)| Usage {
                input,
                output,
                cache_creation,
                cache_read,
                reasoning: r % output.saturating_add(1).max(1),
                cache_creation_1h: h % cache_creation.saturating_add(1).max(1),
            })
    }

    proptest::proptest! {
        /// Sums and differences of tallies of messages stay consistent and add up, whatever
        /// their sizes (saturating, never wrapping), and a message added then taken out leaves
        /// what was there.
        #[test]
        fn arithmetic_keeps_the_invariant(
            a in any_usage(),
            b in any_usage(),
            cost in 0u64..=(1 << 53),
        ) {
            let (x, y) = (Tally::message(a, Money(cost)), Tally::message(b, Money::default()));
            for t in [x, y] {
                proptest::prop_assert!(t.is_consistent());
            }
            let mut sum = x;
            sum.add(&y);
            proptest::prop_assert!(sum.is_consistent());
            let u = &sum.usage;
            let exact: u128 = [u.input, u.output, u.cache_creation, u.cache_read]
                .iter()
                .map(|&n| u128::from(n))
                .sum();
            proptest::prop_assert_eq!(u128::from(u.total()), exact.min(u128::from(u64::MAX)));
            let fits = |t: &Tally| t.counts().iter().all(|&c| c < u64::MAX / 2);
            if fits(&x) && fits(&y) {
                let mut back = sum;
                back.sub(&y);
                proptest::prop_assert_eq!(back, x);
            }
            let mut less = x;
            less.sub(&y);
            proptest::prop_assert!(less.is_consistent());
            proptest::prop_assert_eq!(Tally::from_counts(sum.counts()), Some(sum));
        }
    }

    #[test]
    fn money_is_exact_and_bounded() {
        assert_eq!(
            Money::from_dollars(0.25).map(Money::picodollars),
            Some(250_000_000_000)
        );
        assert_eq!(Money::from_dollars(-0.1), None);
        assert_eq!(Money::from_dollars(f64::NAN), None);
        assert_eq!(Money::from_dollars(1e9), None);
        let sum = (0..10).fold(Money::default(), |m, _| {
            m.plus(Money::from_dollars(0.1).unwrap())
        });
        assert_eq!(sum, Money::from_dollars(1.0).unwrap());
    }
}
