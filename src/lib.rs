//! agentlog: an embedded storage engine for AI-agent session logs.
pub mod event;
pub mod index;
pub mod log;
pub mod session;
pub mod synth;
