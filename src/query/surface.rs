//! The surface fold: which events form the model-visible history (docs/SESSIONS.md, "Surface
//! events and replace" and "Surface fold").
//!
//! The raw log is never edited. History is rewritten by *appending* a surface event
//! whose `surfaceOp` replaces a range of the current surface. Ranges are positional: the
//! replacing node takes the place of the range it removed, so the surface is not sorted
//! by seq, and a later replace may legitimately name `start=2, end=1`.
//!
//! [`SurfaceState`] folds incrementally, as a live session does: [`SurfaceState::check_next`]
//! plans a transition without changing anything, [`SurfaceState::push`] validates and
//! applies it atomically, so a rejected candidate leaves the state untouched.
//! [`fold_surface`] folds a whole log through the same transition, so both paths agree
//! by construction (and a property test holds them to a naive model).

use std::collections::{BTreeMap, HashMap, HashSet};

use serde_json::Value;

use crate::query::envelope::check_surface_fields;
use crate::query::error::Violation;
use crate::query::types::{Replacement, SessionEvent, SurfaceClass, SurfaceOp};

/// Finds an earlier event by seq (needed to check a tool-result rewrite against its target).
pub trait EventLookup {
    /// The event with this seq, if present.
    fn event_at(&self, seq: u64) -> Option<&SessionEvent>;
}

impl EventLookup for [SessionEvent] {
    fn event_at(&self, seq: u64) -> Option<&SessionEvent> {
        usize::try_from(seq)
            .ok()
            .and_then(|i| self.get(i))
            .filter(|e| e.seq == seq)
            // A slice that does not start at seq 0 or leaves events out (a log's surface
            // events alone): a binary search, since the folds pass the folded prefix, whose
            // seqs ascend; a linear search for any other slice.
            .or_else(|| {
                self.binary_search_by_key(&seq, |e| e.seq)
                    .ok()
                    .and_then(|i| self.get(i))
                    .or_else(|| self.iter().find(|e| e.seq == seq))
            })
    }
}

impl EventLookup for Vec<SessionEvent> {
    fn event_at(&self, seq: u64) -> Option<&SessionEvent> {
        self.as_slice().event_at(seq)
    }
}

/// A committed log followed by a batch still being validated.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Chained<'a> {
    /// The committed events, seqs from 0.
    pub(crate) log: &'a [SessionEvent],
    /// The pending events that follow them.
    pub(crate) pending: &'a [SessionEvent],
}

impl EventLookup for Chained<'_> {
    fn event_at(&self, seq: u64) -> Option<&SessionEvent> {
        // Each seq is looked for in the one part that can hold it: looking for a pending seq in
        // the log would fail its binary search and then scan the whole log.
        match self.pending.first() {
            Some(first) if seq >= first.seq => self.pending.event_at(seq),
            _ => self.log.event_at(seq),
        }
    }
}

/// The result of folding a whole log.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SurfaceFold {
    /// The current surface, in surface order.
    pub nodes: Vec<u64>,
    /// Every replacement, in event order.
    pub replacements: Vec<Replacement>,
    current: HashSet<u64>,
    replaced_by: HashMap<u64, u64>,
}

impl SurfaceFold {
    fn new(nodes: Vec<u64>, replacements: Vec<Replacement>) -> Self {
        let current = nodes.iter().copied().collect();
        let replaced_by = replacements
            .iter()
            .flat_map(|r| r.shadowed_seqs.iter().map(move |s| (*s, r.seq)))
            .collect();
        Self {
            nodes,
            replacements,
            current,
            replaced_by,
        }
    }

    /// The class of the event at `seq`: current, shadowed or log-only.
    pub fn classify(&self, seq: u64) -> SurfaceClass {
        if self.current.contains(&seq) {
            SurfaceClass::Current
        } else if self.replaced_by.contains_key(&seq) {
            SurfaceClass::Shadowed
        } else {
            SurfaceClass::LogOnly
        }
    }

    /// The replacement that directly shadowed `seq`, if any.
    pub fn replaced_by(&self, seq: u64) -> Option<u64> {
        self.replaced_by.get(&seq).copied()
    }

    /// The nodes the event at `seq` shadowed (empty if it is not a replacement).
    pub fn replaced_event_seqs(&self, seq: u64) -> &[u64] {
        self.replacements
            .iter()
            .find(|r| r.seq == seq)
            .map_or(&[], |r| r.shadowed_seqs.as_slice())
    }
}

/// A planned transition (what [`SurfaceState::check_next`] found acceptable).
enum Plan {
    LogOnly,
    Append,
    Replace {
        /// The order label of the range's first node, which the replacing node takes.
        label: u64,
        start: u64,
        end: u64,
        /// The range's nodes in surface order, with their labels.
        range: Vec<(u64, u64)>,
    },
}

/// What one [`SurfaceState::push_undoable`] changed, so that [`SurfaceState::undo`] can take
/// it back.
#[derive(Debug)]
pub(crate) struct Undo {
    next_seq: u64,
    change: Change,
}

#[derive(Debug)]
enum Change {
    LogOnly,
    Appended {
        seq: u64,
    },
    Replaced {
        seq: u64,
        label: u64,
        range: Vec<(u64, u64)>,
    },
}

/// The incremental surface fold of a live session.
///
/// The surface is an ordered map from an *order label* to a node's seq. An appended node's
/// label is its own seq, which is above every label so far; a replacing node takes the label
/// of the first node of the range it replaces, which puts it exactly where the range was. So a
/// replace finds its range with two lookups and one range scan, and no label ever moves: a
/// long session's rewrites cost their own size, not the surface's length.
///
/// It serializes, so a derived index (the search index) can keep a session's fold and continue
/// it from the next appended event.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct SurfaceState {
    /// The current nodes: order label → seq, in surface order.
    order: BTreeMap<u64, u64>,
    /// The label of each current replacing node (the others' label is their seq).
    moved: HashMap<u64, u64>,
    replacements: Vec<Replacement>,
    next_seq: u64,
}

impl SurfaceState {
    /// The state of an empty log.
    pub fn new() -> Self {
        Self::default()
    }

    /// The seq the next event must have.
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// The current surface, in surface order.
    pub fn nodes(&self) -> impl ExactSizeIterator<Item = u64> + '_ {
        self.order.values().copied()
    }

    /// Every replacement so far, in event order.
    pub fn replacements(&self) -> &[Replacement] {
        &self.replacements
    }

    /// Validates `candidate` as the next event without changing the state.
    ///
    /// `log` must resolve every earlier seq (it is consulted for tool-result rewrites).
    pub fn check_next(
        &self,
        candidate: &SessionEvent,
        log: &(impl EventLookup + ?Sized),
    ) -> Result<(), Violation> {
        self.plan(candidate, log).map(|_| ())
    }

    /// Validates `candidate` and, if it is valid, folds it in. On error nothing changes.
    pub fn push(
        &mut self,
        candidate: &SessionEvent,
        log: &(impl EventLookup + ?Sized),
    ) -> Result<(), Violation> {
        self.push_undoable(candidate, log).map(|_| ())
    }

    /// [`SurfaceState::push`], returning what it changed. A batch is taken back by undoing
    /// its pushes last first.
    pub(crate) fn push_undoable(
        &mut self,
        candidate: &SessionEvent,
        log: &(impl EventLookup + ?Sized),
    ) -> Result<Undo, Violation> {
        let plan = self.plan(candidate, log)?;
        let seq = candidate.seq;
        let change = match plan {
            Plan::LogOnly => Change::LogOnly,
            Plan::Append => {
                // Every label so far is an earlier seq, so this one sorts last.
                self.order.insert(seq, seq);
                Change::Appended { seq }
            }
            Plan::Replace {
                label,
                start,
                end,
                range,
            } => {
                for (label, node) in &range {
                    self.order.remove(label);
                    self.moved.remove(node);
                }
                // The label is an earlier seq's, never this one.
                self.order.insert(label, seq);
                self.moved.insert(seq, label);
                self.replacements.push(Replacement {
                    seq,
                    start,
                    end,
                    shadowed_seqs: range.iter().map(|&(_, node)| node).collect(),
                });
                Change::Replaced { seq, label, range }
            }
        };
        let undo = Undo {
            next_seq: self.next_seq,
            change,
        };
        self.next_seq = seq.saturating_add(1);
        Ok(undo)
    }

    /// Takes back the push that returned `undo`, which must be the last one not yet undone.
    pub(crate) fn undo(&mut self, undo: Undo) {
        match undo.change {
            Change::LogOnly => {}
            Change::Appended { seq } => {
                self.order.remove(&seq);
            }
            Change::Replaced { seq, label, range } => {
                self.order.remove(&label);
                self.moved.remove(&seq);
                for (label, node) in range {
                    self.order.insert(label, node);
                    if label != node {
                        self.moved.insert(node, label);
                    }
                }
                self.replacements.pop();
            }
        }
        self.next_seq = undo.next_seq;
    }

    /// Moves the next expected seq up to `seq`, for folding the surface events of a log
    /// alone: the events skipped are not surface events, so they could only have been folded
    /// as log-only.
    pub fn skip_to(&mut self, seq: u64) {
        self.next_seq = self.next_seq.max(seq);
    }

    /// The fold so far, with its classification maps.
    pub fn to_fold(&self) -> SurfaceFold {
        SurfaceFold::new(self.nodes().collect(), self.replacements.clone())
    }

    /// Consumes the state into its fold.
    pub fn into_fold(self) -> SurfaceFold {
        SurfaceFold::new(self.order.into_values().collect(), self.replacements)
    }

    /// The order label of the current node `seq`, if it is one.
    fn label_of(&self, seq: u64) -> Option<u64> {
        if self.order.get(&seq) == Some(&seq) {
            Some(seq)
        } else {
            self.moved.get(&seq).copied()
        }
    }

    fn plan(&self, c: &SessionEvent, log: &(impl EventLookup + ?Sized)) -> Result<Plan, Violation> {
        let seq = c.seq;
        let fail = |m: String| Violation::at(seq, m);
        if seq != self.next_seq {
            return Err(fail(format!(
                "seq {seq} is not contiguous; expected {}",
                self.next_seq
            )));
        }
        let ty = c.event_type.as_str();
        check_surface_fields(c)?;
        let (start, end) = match c.surface_op {
            None => return Ok(Plan::LogOnly),
            Some(SurfaceOp::Append) => return Ok(Plan::Append),
            Some(SurfaceOp::Replace { start, end }) => (start, end),
        };
        let label_of = |s: u64, which: &str| {
            self.label_of(s)
                .ok_or_else(|| fail(format!("replace {which} {s} is not a current surface node")))
        };
        let lo = label_of(start, "start")?;
        let hi = label_of(end, "end")?;
        if lo > hi {
            return Err(fail(format!(
                "replace start {start} comes after end {end} on the surface"
            )));
        }
        let range: Vec<(u64, u64)> = self.order.range(lo..=hi).map(|(&l, &s)| (l, s)).collect();
        let cited: HashSet<u64> = c.source_event_seqs.iter().flatten().copied().collect();
        let missing: Vec<u64> = range
            .iter()
            .map(|&(_, node)| node)
            .filter(|s| !cited.contains(s))
            .collect();
        if !missing.is_empty() {
            return Err(fail(format!(
                "replace sourceEventSeqs must cite every shadowed node; missing {}",
                join(&missing)
            )));
        }
        if ty == "tool/result" {
            let target_seq = match range.as_slice() {
                [(_, only)] => *only,
                _ => {
                    return Err(fail(
                        "a tool/result replace must rewrite exactly one current node".into(),
                    ));
                }
            };
            let target = log
                .event_at(target_seq)
                .filter(|t| t.event_type == "tool/result")
                .ok_or_else(|| {
                    fail("a tool/result replace must target a current tool/result".into())
                })?;
            if without_result_content(&target.data) != without_result_content(&c.data) {
                return Err(fail(format!(
                    "a tool/result replace may change only content (message.content[0].content) of {target_seq}"
                )));
            }
        }
        Ok(Plan::Replace {
            label: lo,
            start,
            end,
            range,
        })
    }
}

/// The tool-result payload with the one rewritable part blanked out.
fn without_result_content(data: &Value) -> Value {
    let mut copy = data.clone();
    if let Some(content) = copy.pointer_mut("/message/content/0/content") {
        *content = Value::Null;
    }
    copy
}

fn join(seqs: &[u64]) -> String {
    seqs.iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Folds a whole log from seq 0, enforcing every rule of docs/SESSIONS.md, "Surface events and
/// replace".
pub fn fold_surface(events: &[SessionEvent]) -> Result<SurfaceFold, Violation> {
    let mut state = SurfaceState::new();
    for (i, event) in events.iter().enumerate() {
        // A rewrite's target is a current node, so it is in the folded prefix.
        state.push(event, events.get(..i).unwrap_or_default())?;
    }
    Ok(state.into_fold())
}

/// The surface fold from a log's surface events alone (ascending seq, other events left out):
/// classifies surface events exactly like [`fold_surface`] over the whole log, at the cost of
/// the surface events only.
pub(crate) fn fold_surface_events(surface: &[SessionEvent]) -> Result<SurfaceFold, Violation> {
    let mut state = SurfaceState::new();
    for (i, event) in surface.iter().enumerate() {
        state.skip_to(event.seq);
        state.push(event, surface.get(..i).unwrap_or_default())?;
    }
    Ok(state.into_fold())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::test_support::*;
    use serde_json::json;

    fn err_of(events: &[SessionEvent]) -> String {
        fold_surface(events).unwrap_err().message
    }

    #[test]
    fn sources_absent_or_valid_are_accepted() {
        let events = [
            log_only("turn/start", 0, json!({"turn": 1})),
            user(1, "u", "hi"),
            assistant(2, "a", "ok").with_sources(vec![0, 1]),
        ];
        assert_eq!(fold_surface(&events).unwrap().nodes, vec![1, 2]);
    }

    #[test]
    fn empty_sources_are_allowed_only_on_assistant_messages() {
        assert!(fold_surface(&[assistant(0, "a", "").with_sources(vec![])]).is_ok());
        let err = err_of(&[user(0, "u", "hi").with_sources(vec![])]);
        assert!(err.contains("must not be empty"), "{err}");
    }

    #[test]
    fn log_only_events_cannot_carry_sources_or_ops() {
        let err = err_of(&[log_only("turn/start", 0, json!({"turn": 1})).with_sources(vec![])]);
        assert!(err.contains("cannot carry sourceEventSeqs"), "{err}");
        let err =
            err_of(&[log_only("turn/start", 0, json!({})).with_surface_op(SurfaceOp::Append)]);
        assert!(err.contains("cannot carry surfaceOp"), "{err}");
    }

    #[test]
    fn surface_events_require_an_op() {
        let mut e = user(0, "u", "hi");
        e.surface_op = None;
        assert!(err_of(&[e]).contains("requires a surfaceOp"));
    }

    #[test]
    fn duplicate_and_forward_sources_are_rejected() {
        let dup = err_of(&[
            user(0, "u", "a"),
            user(1, "v", "b").with_sources(vec![0, 0]),
        ]);
        assert!(dup.contains("duplicates"), "{dup}");
        let selfref = err_of(&[user(0, "u", "a").with_sources(vec![0])]);
        assert!(
            selfref.contains("must reference earlier events"),
            "{selfref}"
        );
    }

    #[test]
    fn seq_gap_is_not_contiguous() {
        let err = err_of(&[user(0, "u", "a"), user(2, "v", "b")]);
        assert_eq!(err, "seq 2 is not contiguous; expected 1");
    }

    #[test]
    fn replace_must_cite_every_shadowed_node() {
        let err = err_of(&[
            user(0, "a", "a"),
            user(1, "b", "b"),
            replacing(user(2, "c", "c"), 0, 1, vec![0]),
        ]);
        assert!(err.contains("missing 1"), "{err}");
    }

    #[test]
    fn replace_covering_every_shadowed_node_is_accepted() {
        let fold = fold_surface(&[
            user(0, "a", "a"),
            user(1, "b", "b"),
            replacing(user(2, "c", "c"), 0, 1, vec![1, 0]),
        ])
        .unwrap();
        assert_eq!(fold.nodes, vec![2]);
    }

    #[test]
    fn replace_range_is_positional_not_numeric() {
        let a = [
            user(0, "a", "a"),
            user(1, "b", "b"),
            user(2, "c", "c"),
            replacing(user(3, "d", "d"), 0, 1, vec![0, 1]),
        ];
        assert_eq!(fold_surface(&a).unwrap().nodes, vec![3, 2]);

        let b = [
            user(0, "a", "a"),
            user(1, "b", "b"),
            replacing(user(2, "c", "c"), 1, 1, vec![1]),
        ];
        assert_eq!(fold_surface(&b).unwrap().nodes, vec![0, 2]);
    }

    #[test]
    fn nested_replace_may_run_from_a_higher_seq_to_a_lower_one() {
        let events = [
            user(0, "a", "a"),
            user(1, "b", "b"),
            replacing(user(2, "c", "c"), 0, 0, vec![0]),
            replacing(user(3, "d", "d"), 2, 1, vec![2, 1]),
        ];
        let fold = fold_surface(&events).unwrap();
        assert_eq!(fold.nodes, vec![3]);
        assert_eq!(
            fold.replacements,
            vec![
                Replacement {
                    seq: 2,
                    start: 0,
                    end: 0,
                    shadowed_seqs: vec![0]
                },
                Replacement {
                    seq: 3,
                    start: 2,
                    end: 1,
                    shadowed_seqs: vec![2, 1]
                },
            ]
        );
    }

    #[test]
    fn missing_endpoints_and_reversed_ranges_are_rejected() {
        let base = [user(0, "a", "a"), user(1, "b", "b")];
        for (start, end) in [(5, 1), (0, 5), (1, 0)] {
            let mut events = base.to_vec();
            events.push(replacing(user(2, "c", "c"), start, end, vec![0, 1]));
            assert!(fold_surface(&events).is_err(), "{start}..{end}");
        }
    }

    #[test]
    fn shadowed_nodes_never_return() {
        let err = err_of(&[
            user(0, "a", "a"),
            replacing(user(1, "b", "b"), 0, 0, vec![0]),
            replacing(user(2, "c", "c"), 0, 0, vec![0]),
        ]);
        assert!(err.contains("not a current surface node"), "{err}");
    }

    fn pruned(target: &SessionEvent, seq: u64, text: &str) -> SessionEvent {
        let mut e = target.clone();
        e.seq = seq;
        e.data["message"]["content"][0]["content"] = json!([{"type": "text", "text": text}]);
        replacing(e, target.seq, target.seq, vec![target.seq])
    }

    #[test]
    fn tool_result_rewrite_may_change_only_content() {
        let t = tool_result(0, "r", "c1", "long output");
        let ok = [t.clone(), pruned(&t, 1, "[pruned]")];
        assert_eq!(fold_surface(&ok).unwrap().nodes, vec![1]);

        let edits: [(&str, Value); 4] = [
            ("/message/content/0/toolCallId", json!("c2")),
            ("/message/content/0/isError", json!(true)),
            ("/meta", json!({"x": 1})),
            ("/message/id", json!("other")),
        ];
        for (path, value) in edits {
            let mut bad = pruned(&t, 1, "[pruned]");
            if let Some(slot) = bad.data.pointer_mut(path) {
                *slot = value;
            } else {
                let (parent, key) = path.rsplit_once('/').unwrap();
                bad.data.pointer_mut(parent).unwrap()[key] = value;
            }
            let err = err_of(&[t.clone(), bad]);
            assert!(err.contains("may change only content"), "{path}: {err}");
        }
    }

    #[test]
    fn tool_result_rewrite_targets_exactly_one_tool_result() {
        let t = tool_result(1, "r", "c1", "out");
        let mut two = pruned(&t, 2, "x");
        two.surface_op = Some(SurfaceOp::Replace { start: 0, end: 1 });
        two.source_event_seqs = Some(vec![0, 1]);
        let err = err_of(&[user(0, "u", "hi"), t.clone(), two]);
        assert!(err.contains("exactly one current node"), "{err}");

        let mut at_user = pruned(&t, 2, "x");
        at_user.surface_op = Some(SurfaceOp::Replace { start: 0, end: 0 });
        at_user.source_event_seqs = Some(vec![0]);
        let err = err_of(&[user(0, "u", "hi"), t, at_user]);
        assert!(err.contains("must target a current tool/result"), "{err}");
    }

    #[test]
    fn a_chained_lookup_finds_seqs_in_both_parts_and_nothing_else() {
        let log = [user(0, "a", "a"), tool_result(1, "t", "c", "out")];
        let pending = [tool_result(2, "t2", "c2", "out"), user(3, "b", "b")];
        let chained = Chained {
            log: &log,
            pending: &pending,
        };
        for seq in 0..4 {
            assert_eq!(chained.event_at(seq).map(|e| e.seq), Some(seq));
        }
        assert!(chained.event_at(4).is_none());
        assert!(
            Chained {
                log: &log,
                pending: &[]
            }
            .event_at(2)
            .is_none()
        );
        // A rewrite of a pending tool result, checked against its target there.
        let mut state = SurfaceState::new();
        for (i, e) in log.iter().chain(&pending).enumerate() {
            let seen = Chained {
                log: &log,
                pending: pending
                    .get(..i.saturating_sub(log.len()))
                    .unwrap_or_default(),
            };
            state.push(e, &seen).unwrap();
        }
        let within = Chained {
            log: &log,
            pending: &pending,
        };
        state
            .push(&pruned(&pending[0], 4, "[pruned]"), &within)
            .unwrap();
        assert_eq!(state.nodes().collect::<Vec<_>>(), [0, 1, 4, 3]);
    }

    #[test]
    fn rejected_candidate_leaves_the_incremental_state_unchanged() {
        let log = vec![user(0, "a", "a"), user(1, "b", "b")];
        let mut state = SurfaceState::new();
        for e in &log {
            state.push(e, &log).unwrap();
        }
        let before = state.clone();
        let bad = replacing(user(2, "c", "c"), 1, 0, vec![0, 1]);
        assert!(state.push(&bad, &log).is_err());
        assert_eq!(state, before);
        assert!(state.check_next(&user(2, "c", "c"), &log).is_ok());
        assert_eq!(state, before);
    }

    #[test]
    fn replace_after_append_classifies_shadowed_log_only_current() {
        let events = [
            user(0, "a", "a"),
            log_only("compaction/summary", 1, json!({})),
            replacing(user(2, "s", "summary"), 0, 0, vec![1, 0]),
        ];
        let fold = fold_surface(&events).unwrap();
        let classes: Vec<_> = (0..3).map(|s| fold.classify(s)).collect();
        assert_eq!(
            classes,
            [
                SurfaceClass::Shadowed,
                SurfaceClass::LogOnly,
                SurfaceClass::Current
            ]
        );
    }
}
