//! Traces: a session's lineage, and an event's replacements and provenance (docs/SESSIONS.md,
//! "Lineage trace" and "Event trace").
//!
//! Lineage follows `header.parentSession` only (forks and subagents alike). The walk up
//! stops at the first parent not in the corpus and reports it; a cycle is an error. The
//! descendant tree is built breadth-first and assembled bottom-up with explicit stacks,
//! so a chain thousands of sessions deep neither recurses nor overflows.
//!
//! An event trace shows what replaced the event (and what replaced that), what it
//! replaced, what it cites and what cites it. Provenance is not followed transitively.

use std::collections::{HashMap, HashSet};

use crate::query::error::{QueryError, Result};
use crate::query::surface::fold_surface;
use crate::query::types::{
    LineageResolution, SessionEvent, SessionEventRecord, SessionEventTrace, SessionLineageNode,
    SessionLineageTrace, SessionRecord,
};

/// Traces the lineage of `target_id` within one corpus listing.
pub(crate) fn trace_lineage(
    records: &[SessionRecord],
    target_id: &str,
) -> Result<SessionLineageTrace> {
    let by_id: HashMap<&str, &SessionRecord> =
        records.iter().map(|r| (r.header.id.as_str(), r)).collect();
    let target = *by_id
        .get(target_id)
        .ok_or_else(|| QueryError::SessionNotFound {
            session_id: target_id.to_string(),
        })?;
    let lineage_error = |reason: String| QueryError::InvalidLineage {
        session_id: target_id.to_string(),
        reason,
    };

    let mut ancestors: Vec<SessionRecord> = Vec::new();
    let mut seen: HashSet<&str> = HashSet::from([target_id]);
    let mut path = vec![target_id];
    let mut parent = target.header.parent_session.as_deref();
    let resolution = loop {
        let Some(parent_id) = parent else {
            let root = ancestors.last().unwrap_or(target).clone();
            break LineageResolution::Complete { root };
        };
        path.push(parent_id);
        if !seen.insert(parent_id) {
            return Err(lineage_error(format!(
                "parentSession links form a cycle: {}",
                path.join(" -> ")
            )));
        }
        match by_id.get(parent_id) {
            None => {
                break LineageResolution::Unresolved {
                    unresolved_parent_id: parent_id.to_string(),
                };
            }
            Some(record) => {
                ancestors.push((*record).clone());
                parent = record.header.parent_session.as_deref();
            }
        }
    };

    let descendants = build_descendants(records, target_id).map_err(lineage_error)?;
    Ok(SessionLineageTrace {
        target: target.clone(),
        ancestors,
        descendants,
        resolution,
    })
}

/// The children of `root_id`, each with its subtree, ordered by createdAt then id.
fn build_descendants(
    records: &[SessionRecord],
    root_id: &str,
) -> Result<Vec<SessionLineageNode>, String> {
    let mut children: HashMap<&str, Vec<&SessionRecord>> = HashMap::new();
    for r in records {
        if let Some(p) = r.header.parent_session.as_deref() {
            children.entry(p).or_default().push(r);
        }
    }
    for list in children.values_mut() {
        list.sort_by(|a, b| {
            (a.header.created_at, &a.header.id).cmp(&(b.header.created_at, &b.header.id))
        });
    }
    let kids_of = |id: &str| children.get(id).map_or(&[][..], Vec::as_slice);

    // Breadth-first order; each entry remembers the index of its parent entry.
    let mut order: Vec<(&SessionRecord, Option<usize>)> =
        kids_of(root_id).iter().map(|r| (*r, None)).collect();
    let mut visited: HashSet<&str> = HashSet::from([root_id]);
    let mut i = 0;
    while let Some((record, _)) = order.get(i).copied() {
        if !visited.insert(record.header.id.as_str()) {
            return Err(format!(
                "session \"{}\" is reached twice below \"{root_id}\"",
                record.header.id
            ));
        }
        order.extend(kids_of(&record.header.id).iter().map(|r| (*r, Some(i))));
        i += 1;
    }

    // Assemble bottom-up: children come after parents in `order`.
    let mut pending: Vec<Vec<SessionLineageNode>> = vec![Vec::new(); order.len()];
    let mut top = Vec::new();
    for (index, (record, parent)) in order.iter().enumerate().rev() {
        let mut descendants = pending
            .get_mut(index)
            .map(std::mem::take)
            .unwrap_or_default();
        descendants.reverse();
        let node = SessionLineageNode {
            session: (*record).clone(),
            descendants,
        };
        match parent.and_then(|p| pending.get_mut(p)) {
            Some(siblings) => siblings.push(node),
            None => top.push(node),
        }
    }
    top.reverse();
    Ok(top)
}

/// Traces the event at `seq` of a whole, normalized log.
///
/// The target's existence is checked before the fold, so a missing event is
/// [`QueryError::EventNotFound`] even in a log whose surface is broken.
pub(crate) fn trace_event(
    session_id: &str,
    events: &[SessionEvent],
    seq: u64,
) -> Result<SessionEventTrace> {
    let target = events
        .iter()
        .find(|e| e.seq == seq)
        .ok_or_else(|| QueryError::EventNotFound {
            session_id: session_id.to_string(),
            seq,
        })?;
    let fold = fold_surface(events).map_err(|violation| QueryError::InvalidSurface {
        session_id: session_id.to_string(),
        violation,
    })?;
    let replaced_by = fold.replaced_by(seq);
    let mut replacement_chain = Vec::new();
    let mut next = replaced_by;
    // Each replacement has a higher seq than what it shadows, so this terminates.
    while let Some(r) = next {
        replacement_chain.push(r);
        next = fold.replaced_by(r);
    }
    let derived_event_seqs = events
        .iter()
        .filter(|e| {
            e.seq > seq
                && e.source_event_seqs
                    .as_ref()
                    .is_some_and(|s| s.contains(&seq))
        })
        .map(|e| e.seq)
        .collect();
    Ok(SessionEventTrace {
        target: SessionEventRecord {
            session_id: session_id.to_string(),
            seq,
            event_type: target.event_type.clone(),
            time: target.time,
            surface: fold.classify(seq),
        },
        replaced_by,
        replacement_chain,
        replaced_event_seqs: fold.replaced_event_seqs(seq).to_vec(),
        source_event_seqs: target.source_event_seqs.clone().unwrap_or_default(),
        derived_event_seqs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::test_support::*;
    use crate::query::types::{SessionHeader, SurfaceClass};
    use serde_json::{Value, json};

    fn rec(id: &str, created: u64, parent: Option<&str>) -> SessionRecord {
        let mut header = SessionHeader::new(id, created);
        header.parent_session = parent.map(str::to_string);
        SessionRecord {
            header,
            live: false,
            persisted: true,
        }
    }

    fn ids(nodes: &[SessionLineageNode]) -> Vec<&str> {
        nodes.iter().map(|n| n.session.header.id.as_str()).collect()
    }

    #[test]
    fn lineage_has_ancestors_and_ordered_descendants() {
        let records = vec![
            rec("root", 1, None),
            rec("parent", 2, Some("root")),
            rec("target", 3, Some("parent")),
            rec("b", 4, Some("target")),
            rec("a", 4, Some("target")),
            rec("older", 3, Some("target")),
            rec("grandchild", 5, Some("a")),
        ];
        let trace = trace_lineage(&records, "target").unwrap();
        let ancestors: Vec<_> = trace
            .ancestors
            .iter()
            .map(|r| r.header.id.as_str())
            .collect();
        assert_eq!(ancestors, ["parent", "root"]);
        assert_eq!(ids(&trace.descendants), ["older", "a", "b"]);
        assert_eq!(ids(&trace.descendants[1].descendants), ["grandchild"]);
        assert!(
            matches!(&trace.resolution, LineageResolution::Complete { root } if root.header.id == "root")
        );
    }

    #[test]
    fn lineage_json_is_the_reference_tree() {
        let records = vec![
            rec("root", 1, None),
            rec("target", 2, Some("root")),
            rec("b", 4, Some("target")),
            rec("a", 3, Some("target")),
            rec("grandchild", 5, Some("a")),
        ];
        let session = |r: &SessionRecord| serde_json::to_value(r).unwrap();
        let [root, target, b, a, grandchild] = [0, 1, 2, 3, 4].map(|i| session(&records[i]));
        let json: Value = serde_json::from_str(
            &trace_lineage(&records, "target")
                .unwrap()
                .to_json_string()
                .unwrap(),
        )
        .unwrap();
        assert_eq!(
            json,
            json!({
                "target": target,
                "ancestors": [root],
                "descendants": [
                    {"session": a, "descendants": [{"session": grandchild, "descendants": []}]},
                    {"session": b, "descendants": []},
                ],
                "complete": true,
                "root": root,
            })
        );
        // A record is dsh's `{header, live, persisted}`.
        assert_eq!(json["target"]["header"]["id"], "target");
        assert_eq!(json["target"]["persisted"], true);
    }

    #[test]
    fn unresolved_parent_gives_an_incomplete_trace() {
        let trace = trace_lineage(&[rec("t", 1, Some("gone"))], "t").unwrap();
        assert!(
            matches!(&trace.resolution, LineageResolution::Unresolved { unresolved_parent_id } if unresolved_parent_id == "gone")
        );
        let json: Value = serde_json::from_str(&trace.to_json_string().unwrap()).unwrap();
        assert_eq!(
            (json["complete"].clone(), json["unresolvedParentId"].clone()),
            (json!(false), json!("gone"))
        );
        assert!(json.get("root").is_none(), "{json}");
    }

    #[test]
    fn parent_cycle_is_an_invalid_lineage() {
        let records = vec![rec("a", 1, Some("b")), rec("b", 2, Some("a"))];
        assert_eq!(
            trace_lineage(&records, "a").unwrap_err().code(),
            "invalid_lineage"
        );
    }

    /// A test thread's stack cannot hold one call frame per level at this depth, in any walk
    /// of the tree.
    #[test]
    fn a_100_000_deep_chain_is_traced_copied_compared_written_and_dropped_without_recursion() {
        const N: u64 = 100_000;
        let mut records = vec![rec("s0", 0, None)];
        for i in 1..N {
            records.push(rec(&format!("s{i}"), i, Some(&format!("s{}", i - 1))));
        }
        let down = trace_lineage(&records, "s0").unwrap();
        let mut depth = 0;
        let mut level = &down.descendants;
        while let Some(node) = level.first() {
            assert_eq!(
                node.descendants.len(),
                usize::from(depth + 2 < N),
                "{depth}"
            );
            depth += 1;
            level = &node.descendants;
        }
        assert_eq!(depth, N - 1);

        let copy = down.clone();
        assert_eq!(copy, down);
        let mut changed = down.clone();
        let mut deepest = &mut changed.descendants;
        while deepest.first().is_some_and(|n| !n.descendants.is_empty()) {
            deepest = &mut deepest[0].descendants;
        }
        deepest[0].session.live = true;
        assert_ne!(changed, down, "a difference at the bottom is found");
        drop((copy, changed));

        // The exact bytes, built here level by level: `{"session":..,"descendants":[` down the
        // chain, then `]}` back up.
        let mut expected = String::from("[");
        for record in &records[1..] {
            expected.push_str("{\"session\":");
            expected.push_str(&serde_json::to_string(record).unwrap());
            expected.push_str(",\"descendants\":[");
        }
        expected.push_str(&"]}".repeat(records.len() - 1));
        expected.push(']');
        let json = down.to_json_string().unwrap();
        let start = json.find("\"descendants\":").unwrap() + "\"descendants\":".len();
        let end = json.rfind(",\"complete\":true,\"root\":").unwrap();
        assert!(json[start..end] == expected, "the descendants differ");

        let debug = format!("{:?}", down.descendants[0]);
        assert_eq!(debug.matches("SessionLineageNode {").count() as u64, N - 1);
        assert!(debug.ends_with(&"] }".repeat(10)));
        drop(down);

        let up = trace_lineage(&records, "s99999").unwrap();
        assert_eq!(up.ancestors.len() as u64, N - 1);
        assert!(up.descendants.is_empty());
    }

    #[test]
    fn missing_target_is_session_not_found() {
        assert_eq!(
            trace_lineage(&[], "x").unwrap_err().code(),
            "session_not_found"
        );
    }

    #[test]
    fn event_trace_reports_replacements_and_provenance() {
        let events = trace_fixture();
        let t = |seq| trace_event("s", &events, seq).unwrap();

        let t3 = t(3);
        assert_eq!(
            (t3.replaced_by, t3.replacement_chain.clone()),
            (Some(4), vec![4, 8])
        );
        assert_eq!(
            (
                t3.replaced_event_seqs.clone(),
                t3.source_event_seqs.clone(),
                t3.derived_event_seqs.clone()
            ),
            (vec![], vec![2], vec![4])
        );

        let t4 = t(4);
        assert_eq!(
            (t4.replaced_by, t4.replacement_chain.clone()),
            (Some(8), vec![8])
        );
        assert_eq!(
            (
                t4.replaced_event_seqs.clone(),
                t4.source_event_seqs.clone(),
                t4.derived_event_seqs.clone()
            ),
            (vec![3], vec![3, 2], vec![8])
        );

        let t2 = t(2);
        assert_eq!(t2.derived_event_seqs, vec![3, 4, 8]);
        assert_eq!(t2.target.surface, SurfaceClass::LogOnly);

        let t8 = t(8);
        assert_eq!(
            (t8.replaced_by, t8.replacement_chain.clone()),
            (None, vec![])
        );
        assert_eq!(
            (
                t8.replaced_event_seqs.clone(),
                t8.source_event_seqs.clone(),
                t8.derived_event_seqs.clone()
            ),
            (vec![4], vec![2, 4], vec![])
        );
    }

    #[test]
    fn event_existence_is_checked_before_the_surface() {
        let mut events = trace_fixture();
        events[8].source_event_seqs = Some(vec![2]); // breaks the replace rule
        assert_eq!(
            trace_event("s", &events, 99).unwrap_err().code(),
            "event_not_found"
        );
        assert_eq!(
            trace_event("s", &events, 3).unwrap_err().code(),
            "invalid_surface"
        );
    }
}
