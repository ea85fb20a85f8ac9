//! Filters as SQL predicates over a candidate row, with the reference's budget.
//!
//! A candidate row has the columns `sid, cwd, created_at, parent, live, persisted` (its session)
//! and `seq, time, type, surface` (its event). A list clause is one `IN` predicate (the
//! constant `0` when empty), a nullable list adds `OR col IS NULL`, each range bound is its own
//! predicate, and availability is one predicate or none. At most 14 predicates may reach one
//! search (13 for an event search, whose session id takes a slot), and at most 32,766 bound
//! values; beyond that the request is refused as an invalid filter before anything runs.

use rusqlite::types::Value as SqlValue;

use crate::query::{Availability, EventFilter, SessionFilter, SurfaceClass};
use crate::search::error::SearchError;
use crate::search::request::check_event_filters;

/// The most predicates a session search may carry.
pub const SESSION_PREDICATE_BUDGET: usize = 14;
/// The most filter predicates an event search may carry (its session id is the 14th).
pub const EVENT_PREDICATE_BUDGET: usize = 13;
/// The most values bound to one statement (SQLite's own limit).
pub const MAX_BOUND_VALUES: usize = 32_766;

/// Compiled predicates: SQL text joined with `AND` (or `1`), and the values it binds in order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Predicates {
    clauses: Vec<String>,
    /// The values bound by [`Predicates::sql`], in order.
    pub values: Vec<SqlValue>,
}

/// The text of a surface class as stored in the index.
pub fn surface_name(class: SurfaceClass) -> &'static str {
    match class {
        SurfaceClass::Current => "current",
        SurfaceClass::Shadowed => "shadowed",
        SurfaceClass::LogOnly => "log-only",
    }
}

impl Predicates {
    /// The predicates as one SQL condition; parameters are numbered from `first`.
    pub fn sql(&self, first: usize) -> String {
        if self.clauses.is_empty() {
            return "1".into();
        }
        let mut n = first;
        let mut out = Vec::with_capacity(self.clauses.len());
        for clause in &self.clauses {
            let mut text = String::with_capacity(clause.len() + 8);
            for c in clause.chars() {
                if c == '?' {
                    text.push('?');
                    text.push_str(&n.to_string());
                    n += 1;
                } else {
                    text.push(c);
                }
            }
            out.push(format!("({text})"));
        }
        out.join(" AND ")
    }

    /// How many predicates there are.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.clauses.len()
    }

    fn list(&mut self, column: &str, values: Vec<SqlValue>, nullable: bool) {
        let marks = vec!["?"; values.len()].join(",");
        let clause = match (values.is_empty(), nullable) {
            (true, false) => "0".to_string(),
            (true, true) => format!("{column} IS NULL"),
            (false, false) => format!("{column} IN ({marks})"),
            (false, true) => format!("{column} IN ({marks}) OR {column} IS NULL"),
        };
        self.clauses.push(clause);
        self.values.extend(values);
    }

    fn range(&mut self, column: &str, from: Option<f64>, to: Option<f64>) {
        if let Some(from) = from {
            self.clauses.push(format!("CAST({column} AS INTEGER) >= ?"));
            self.values.push(SqlValue::Real(from));
        }
        if let Some(to) = to {
            self.clauses.push(format!("CAST({column} AS INTEGER) <= ?"));
            self.values.push(SqlValue::Real(to));
        }
    }

    /// Adds session filter clauses (already validated).
    pub fn add_session_filters(&mut self, filters: &[SessionFilter]) {
        for filter in filters {
            match filter {
                SessionFilter::Id { values } => self.list("sid", texts(values), false),
                SessionFilter::Cwd { values } => {
                    let (present, null) = split_nulls(values);
                    self.list("cwd", present, null);
                }
                SessionFilter::CreatedAt { from, to } => self.range("created_at", *from, *to),
                SessionFilter::Parent { values } => {
                    let (present, null) = split_nulls(values);
                    self.list("parent", present, null);
                }
                SessionFilter::Availability { values } => {
                    let live = values.contains(&Availability::Live);
                    let persisted = values.contains(&Availability::Persisted);
                    match (live, persisted) {
                        (false, false) => self.clauses.push("0".into()),
                        (true, false) => self.clauses.push("live = 1".into()),
                        (false, true) => self.clauses.push("persisted = 1".into()),
                        (true, true) => {}
                    }
                }
            }
        }
    }

    /// Adds event filter clauses (already validated; `text` is refused before).
    pub fn add_event_filters(&mut self, filters: &[EventFilter]) {
        for filter in filters {
            match filter {
                EventFilter::Seq { from, to } => self.range("seq", *from, *to),
                EventFilter::Time { from, to } => self.range("time", *from, *to),
                EventFilter::Type { values } => self.list("type", texts(values), false),
                EventFilter::Surface { values } => {
                    let names = values
                        .iter()
                        .map(|c| SqlValue::Text(surface_name(*c).into()))
                        .collect();
                    self.list("surface", names, false);
                }
                EventFilter::Text { .. } => self.clauses.push("0".into()),
            }
        }
    }

    /// The predicates of a search's filters, checked (a `text` filter is refused) and within
    /// `budget` (`fixed` more values are bound by the statement itself).
    pub fn of_filters(
        session: &[SessionFilter],
        event: &[EventFilter],
        budget: usize,
        fixed: usize,
    ) -> Result<Predicates, SearchError> {
        crate::query::compile_session_filters(session)?;
        check_event_filters(event)?;
        let mut predicates = Predicates::default();
        predicates.add_session_filters(session);
        predicates.add_event_filters(event);
        predicates.check_budget(budget, fixed)?;
        Ok(predicates)
    }

    /// Refuses predicates over `budget` or too many bound values (`fixed` more are bound by
    /// the statement itself).
    pub fn check_budget(&self, budget: usize, fixed: usize) -> Result<(), SearchError> {
        if self.clauses.len() > budget {
            return Err(SearchError::filter(format!(
                "{} filter predicates, at most {budget} fit one search",
                self.clauses.len()
            )));
        }
        if self.values.len() + fixed > MAX_BOUND_VALUES {
            return Err(SearchError::filter(format!(
                "{} filter values, at most {} fit one search",
                self.values.len(),
                MAX_BOUND_VALUES - fixed
            )));
        }
        Ok(())
    }
}

fn texts(values: &[String]) -> Vec<SqlValue> {
    values.iter().map(|v| SqlValue::Text(v.clone())).collect()
}

fn split_nulls(values: &[Option<String>]) -> (Vec<SqlValue>, bool) {
    let present = values
        .iter()
        .flatten()
        .map(|v| SqlValue::Text(v.clone()))
        .collect();
    (present, values.iter().any(Option::is_none))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clauses_are_numbered_in_order() {
        let mut p = Predicates::default();
        p.add_session_filters(&[SessionFilter::Cwd {
            values: vec![Some("/a".into()), None],
        }]);
        p.add_event_filters(&[
            EventFilter::Seq {
                from: Some(1.0),
                to: Some(4.0),
            },
            EventFilter::Type { values: vec![] },
        ]);
        assert_eq!(p.len(), 4);
        assert_eq!(
            p.sql(3),
            "(cwd IN (?3) OR cwd IS NULL) AND (CAST(seq AS INTEGER) >= ?4) AND (CAST(seq AS INTEGER) <= ?5) AND (0)"
        );
        assert_eq!(p.values.len(), 3);
    }

    #[test]
    fn the_budget_is_the_references() {
        let types = |n: usize| {
            (0..n)
                .map(|i| EventFilter::Type {
                    values: vec![format!("t{i}")],
                })
                .collect::<Vec<_>>()
        };
        let mut p = Predicates::default();
        p.add_event_filters(&types(14));
        assert!(p.check_budget(SESSION_PREDICATE_BUDGET, 3).is_ok());
        assert_eq!(
            p.check_budget(EVENT_PREDICATE_BUDGET, 4)
                .unwrap_err()
                .code(),
            "invalid_filter"
        );
        let mut both = Predicates::default();
        both.add_session_filters(&[SessionFilter::Id {
            values: vec!["a".into()],
        }]);
        both.add_event_filters(&types(14));
        assert!(both.check_budget(SESSION_PREDICATE_BUDGET, 3).is_err());
        let mut many = Predicates::default();
        many.add_event_filters(&[EventFilter::Type {
            values: (0..MAX_BOUND_VALUES).map(|i| i.to_string()).collect(),
        }]);
        assert!(many.check_budget(SESSION_PREDICATE_BUDGET, 3).is_err());
    }

    #[test]
    fn availability_of_both_is_no_predicate() {
        let mut p = Predicates::default();
        p.add_session_filters(&[SessionFilter::Availability {
            values: vec![Availability::Persisted, Availability::Live],
        }]);
        assert_eq!(p.len(), 0);
        assert_eq!(p.sql(1), "1");
    }
}
