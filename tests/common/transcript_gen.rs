//! Generated transcripts shaped like the real ones, with every hazard the rules name:
//! streaming partials, sidechain replays, lines without requestId or message.id, progress
//! lines carrying copies of usage, boundaries with and without summaries, microcompact
//! boundaries, replays after a compaction, repeated cumulative totals, null info, pairs and
//! lone compaction events, duplicated pi entries, odd values, lines that are not JSON.
#![allow(dead_code)]
// Generated figures are small: indices fit a usize and counts stay far below 2^53.
#![allow(clippy::cast_possible_truncation, clippy::cast_precision_loss)]

use agentlog::transcript::Format;
use serde_json::{Value, json};

#[path = "transcript_gen/gemini_qwen.rs"]
mod gemini_qwen;

/// A small deterministic generator (xorshift64*).
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next() % n }
    }

    /// True with probability `percent` / 100.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

fn ts(minute: u64) -> String {
    let hours = 10 + minute / 60;
    format!(
        "2026-02-{:02}T{:02}:{:02}:05.123Z",
        12 + hours / 24,
        hours % 24,
        minute % 60
    )
}

/// A count, sometimes written as a string or an integral float.
fn number(rng: &mut Rng, n: u64) -> Value {
    match rng.below(40) {
        0 => json!(n.to_string()),
        1 => json!(n as f64),
        _ => json!(n),
    }
}

/// A transcript of `format` with about `steps` messages or events.
pub fn transcript(format: Format, seed: u64, steps: usize) -> Vec<u8> {
    let mut rng = Rng::new(seed);
    let lines = match format {
        Format::ClaudeCode => claude(&mut rng, steps),
        Format::Codex => codex(&mut rng, steps),
        Format::Pi => pi(&mut rng, steps),
        Format::Copilot => copilot(&mut rng, steps),
        Format::Gemini => gemini_qwen::gemini(&mut rng, steps),
        Format::Qwen => gemini_qwen::qwen(&mut rng, steps),
        Format::OpenCode => unreachable!("an OpenCode database is not lines"),
        Format::Kimi => kimi(&mut rng, steps),
    };
    let mut out = Vec::new();
    for line in lines {
        out.extend_from_slice(line.as_bytes());
        out.push(b'\n');
    }
    out
}

fn claude(rng: &mut Rng, steps: usize) -> Vec<String> {
    let models = [
        "claude-opus-4-6",
        "claude-sonnet-4-5-20250929",
        "<synthetic>",
    ];
    let mut out = vec![
        json!({"type":"file-history-snapshot","messageId":"m0","snapshot":{},"isSnapshotUpdate":false}).to_string(),
        json!({"parentUuid":null,"isSidechain":false,"type":"user","sessionId":"s1","uuid":"u-root","timestamp":ts(0),"message":{"role":"user","content":"hi"}}).to_string(),
    ];
    let mut earlier: Vec<String> = Vec::new();
    let mut boundaries: Vec<String> = Vec::new();
    let mut uuid = 0u64;
    for step in 0..steps {
        let minute = step as u64 * 3;
        match rng.below(40) {
            0 => {
                uuid += 1;
                let b = json!({"parentUuid":null,"type":"system","subtype":"compact_boundary","content":"Conversation compacted","uuid":format!("b{uuid}"),"timestamp":ts(minute),"compactMetadata":{"trigger": if rng.chance(70) {"auto"} else {"manual"},"preTokens": 150_000 + rng.below(30_000)}}).to_string();
                out.push(b.clone());
                boundaries.push(b);
                if rng.chance(85) {
                    uuid += 1;
                    out.push(json!({"type":"user","isCompactSummary":true,"uuid":format!("s{uuid}"),"timestamp":ts(minute),"message":{"role":"user","content":"This session is being continued"}}).to_string());
                }
                // The replay hazard: lines of earlier messages appended again after the boundary.
                for _ in 0..rng.below(4) {
                    if !earlier.is_empty() {
                        let i = rng.below(earlier.len() as u64) as usize;
                        out.push(earlier[i].clone());
                    }
                }
                continue;
            }
            1 => {
                uuid += 1;
                out.push(json!({"type":"user","isCompactSummary":true,"uuid":format!("s{uuid}"),"timestamp":ts(minute),"message":{"role":"user","content":"continued"}}).to_string());
                continue;
            }
            2 => {
                out.push(json!({"type":"system","subtype":"microcompact_boundary","uuid":format!("mc{step}"),"timestamp":ts(minute),"microcompactMetadata":{"trigger":"auto","preTokens":1000}}).to_string());
                continue;
            }
            3 if !boundaries.is_empty() => {
                // A boundary line replayed verbatim: not a new boundary.
                let i = rng.below(boundaries.len() as u64) as usize;
                out.push(boundaries[i].clone());
                continue;
            }
            4 => {
                out.push(
                    r#"{"type":"assistant","message":{"id":"msg_torn","usage":{"input_tokens":5"#
                        .to_owned(),
                );
                continue;
            }
            5 => {
                out.push(String::new());
                continue;
            }
            6 => {
                out.push(json!({"type":"assistant","uuid":format!("e{step}"),"timestamp":ts(minute),"message":{"id":format!("msg_err{step}"),"model":"<synthetic>","usage":null}}).to_string());
                continue;
            }
            _ => {}
        }
        out.push(json!({"type":"user","uuid":format!("q{step}"),"timestamp":ts(minute),"message":{"role":"user","content":"do it"}}).to_string());
        let id = (!rng.chance(4)).then(|| format!("msg_{step:04}"));
        let request = match rng.below(12) {
            0 => None,
            1 => Some(Value::Null),
            _ => Some(json!(format!("req_{step}"))),
        };
        let sidechain = rng.chance(8);
        let model = models[rng.below(3) as usize];
        let input = rng.below(20);
        let cache_create = rng.below(20_000);
        let cache_read = rng.below(200_000);
        let parts = 1 + rng.below(4);
        let mut output = 1 + rng.below(50);
        for part in 0..parts {
            let mut usage = json!({
                "input_tokens": number(rng, input),
                "cache_creation_input_tokens": number(rng, cache_create),
                "cache_read_input_tokens": number(rng, cache_read),
                "output_tokens": output,
                "service_tier":"standard",
            });
            // Newer lines break the writes down by how long they are kept (from the figures
            // already drawn, so the generator's other draws are as before); now and then the
            // one-hour part is larger than the whole.
            match cache_create % 7 {
                0 | 3 => {
                    usage["cache_creation"] = json!({
                        "ephemeral_5m_input_tokens": cache_create - cache_create / 4,
                        "ephemeral_1h_input_tokens": cache_create / 4,
                    });
                }
                5 if cache_create.is_multiple_of(5) => {
                    usage["cache_creation"] =
                        json!({"ephemeral_1h_input_tokens": cache_create + 5});
                }
                _ => {}
            }
            match rng.below(30) {
                0 => usage["cache_read_input_tokens"] = Value::Null,
                1 => {
                    usage
                        .as_object_mut()
                        .map(|u| u.remove("cache_creation_input_tokens"));
                }
                2 => usage["iterations"] = json!([{"input_tokens":1,"output_tokens":2}]),
                3 => usage["output_tokens"] = json!(-3),
                _ => {}
            }
            let mut line = json!({
                "parentUuid": format!("q{step}"),
                "isSidechain": sidechain,
                "type":"assistant",
                "uuid": format!("a{step}-{part}"),
                "timestamp": if rng.chance(2) { json!("not a time") } else { json!(ts(minute + part)) },
                "message": {"model": model, "role":"assistant","type":"message","content":[{"type":"text","text":"ok"}],"usage": usage},
            });
            if let Some(id) = &id {
                line["message"]["id"] = json!(id);
            }
            if let Some(request) = &request {
                line["requestId"] = request.clone();
            }
            let text = line.to_string();
            out.push(text.clone());
            earlier.push(text);
            // Streaming partials grow, but not always in file order.
            output = if rng.chance(80) {
                output + rng.below(400)
            } else {
                output / 2
            };
        }
        if rng.chance(10) {
            // A progress line carrying a copy of the usage: never counted.
            out.push(json!({"type":"progress","data":{"message":{"type":"assistant","message":{"id":"msg_progress","usage":{"input_tokens":999,"output_tokens":999}}}},"timestamp":ts(minute)}).to_string());
        }
        if rng.chance(6) && id.is_some() {
            // A sidechain replay of this message under a new request id.
            let mut replay: Value =
                serde_json::from_str(earlier.last().map_or("{}", |s| s.as_str()))
                    .unwrap_or(json!({}));
            replay["isSidechain"] = json!(true);
            replay["requestId"] = json!(format!("req_btw_{step}"));
            replay["message"]["usage"]["output_tokens"] = json!(output + 1000);
            out.push(replay.to_string());
        }
    }
    out
}

fn codex(rng: &mut Rng, steps: usize) -> Vec<String> {
    let mut out = vec![json!({"timestamp":ts(0),"type":"session_meta","payload":{"id":"019c","cwd":"/w","cli_version":"0.89.0"}}).to_string()];
    out.push(json!({"timestamp":ts(0),"type":"event_msg","payload":{"type":"token_count","info":null,"rate_limits":{}}}).to_string());
    let mut totals = [0u64; 5];
    for step in 0..steps {
        let minute = step as u64 * 2;
        match rng.below(30) {
            0 => {
                out.push(json!({"timestamp":ts(minute),"type":"compacted","payload":{"message":"","replacement_history":[{"type":"message","role":"user","content":[]}]}}).to_string());
                if rng.chance(85) {
                    let mut event = json!({"timestamp":ts(minute),"type":"event_msg","payload":{"type":"context_compacted"}});
                    if rng.chance(50) {
                        event["payload"]["tokens_before"] = json!(200_000 + rng.below(50_000));
                    }
                    out.push(event.to_string());
                }
                continue;
            }
            1 => {
                out.push(json!({"timestamp":ts(minute),"type":"event_msg","payload":{"type":"context_compacted"}}).to_string());
                continue;
            }
            2 => {
                let model = if rng.chance(50) {
                    "gpt-5-codex"
                } else {
                    "gpt-5.2"
                };
                out.push(json!({"timestamp":ts(minute),"type":"turn_context","payload":{"cwd":"/w","model":model}}).to_string());
                continue;
            }
            3 => {
                out.push(json!({"timestamp":ts(minute),"type":"event_msg","payload":{"type":"token_count","info":null}}).to_string());
                continue;
            }
            4 if rng.chance(30) => {
                // The counter restarts (a new process on the same rollout).
                totals = [0; 5];
            }
            5 => {
                out.push("{\"timestamp\":\"x\",\"type\":\"event_msg\",\"payload\":{\"type\":\"token_count\"".to_owned());
                continue;
            }
            6 => {
                out.push(json!({"timestamp":ts(minute),"type":"event_msg","payload":{"type":"token_count","info":{"last_token_usage":{"input_tokens":5}}}}).to_string());
                continue;
            }
            _ => {}
        }
        out.push(json!({"timestamp":ts(minute),"type":"response_item","payload":{"type":"message","role":"assistant","content":[]}}).to_string());
        let input = 1000 + rng.below(20_000);
        let cached = rng.below(input);
        let output = rng.below(800);
        let reasoning = rng.below(output + 1);
        let add = [input, cached, output, reasoning, input + output];
        let repeats = 1 + rng.below(3);
        for (t, a) in totals.iter_mut().zip(add) {
            *t += a;
        }
        for _ in 0..repeats {
            let total = json!({
                "input_tokens": number(rng, totals[0]),
                "cached_input_tokens": totals[1],
                "output_tokens": totals[2],
                "reasoning_output_tokens": totals[3],
                "total_tokens": totals[4],
            });
            out.push(json!({"timestamp": ts(minute + 1),"type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage": total,"last_token_usage": {"input_tokens": input},"model_context_window":258_400}}}).to_string());
        }
    }
    out
}

fn pi(rng: &mut Rng, steps: usize) -> Vec<String> {
    let mut out = vec![
        json!({"type":"session","version":3,"id":"0a1b","timestamp":ts(0),"cwd":"/w"}).to_string(),
        json!({"type":"model_change","id":"mc000001","parentId":null,"timestamp":ts(0),"provider":"anthropic","modelId":"claude-opus-4-5"}).to_string(),
    ];
    let mut assistants: Vec<String> = Vec::new();
    let mut compactions: Vec<String> = Vec::new();
    let mut parent = "mc000001".to_owned();
    for step in 0..steps {
        let minute = step as u64 * 2;
        let id = format!("{:08x}", 0x1000 + step);
        match rng.below(25) {
            0 => {
                let c = json!({"type":"compaction","id":id,"parentId":parent,"timestamp":ts(minute),"summary":"…","firstKeptEntryId":parent,"tokensBefore":50_000 + rng.below(10_000)}).to_string();
                out.push(c.clone());
                compactions.push(c);
                continue;
            }
            1 if !compactions.is_empty() => {
                let i = rng.below(compactions.len() as u64) as usize;
                out.push(compactions[i].clone());
                continue;
            }
            2 if !assistants.is_empty() => {
                let i = rng.below(assistants.len() as u64) as usize;
                out.push(assistants[i].clone());
                continue;
            }
            3 => {
                // A branch: a new child of an older entry.
                out.push(json!({"type":"branch_summary","id":format!("br{step:06}"),"parentId":"mc000001","timestamp":ts(minute),"fromId":parent,"summary":"…"}).to_string());
                continue;
            }
            4 => {
                out.push(json!({"type":"message","id":format!("nu{step:06}"),"parentId":parent,"timestamp":ts(minute),"message":{"role":"assistant","content":[],"model":"claude-opus-4-5","stopReason":"error"}}).to_string());
                continue;
            }
            _ => {}
        }
        out.push(json!({"type":"message","id":format!("us{step:06}"),"parentId":parent,"timestamp":ts(minute),"message":{"role":"user","content":[{"type":"text","text":"go"}]}}).to_string());
        let input = rng.below(5000);
        let output = rng.below(500);
        let cost = (input as f64) * 0.000_005 + (output as f64) * 0.000_025;
        let cost = if rng.chance(5) {
            json!(cost.to_string())
        } else {
            json!(cost)
        };
        let model = if rng.chance(70) {
            "claude-opus-4-5"
        } else {
            "gpt-5"
        };
        let line = json!({"type":"message","id":id,"parentId":format!("us{step:06}"),"timestamp":ts(minute + 1),"message":{"role":"assistant","content":[{"type":"text","text":"ok"}],"provider":"anthropic","model":model,"usage":{"input":number(rng, input),"output":output,"cacheRead":0,"cacheWrite":rng.below(100),"totalTokens":input + output,"cost":{"input":0.0,"output":0.0,"total":cost}},"stopReason":"stop"}}).to_string();
        out.push(line.clone());
        assistants.push(line);
        parent = id;
    }
    out
}

/// GitHub Copilot CLI: processes (a `session.start`, then `session.resume`s), each ending in a
/// `session.shutdown` with its own totals by model, or killed before it (its messages'
/// `outputTokens` and compaction calls are all there is); compactions in both spellings of
/// `compactionTokensUsed`; odd values, torn and empty lines.
fn copilot(rng: &mut Rng, steps: usize) -> Vec<String> {
    let models = ["claude-sonnet-4.5", "gpt-5", "claude-opus-4.6"];
    let mut out = vec![
        json!({"type":"session.start","data":{"sessionId":"s1","version":1,"producer":"copilot-agent","copilotVersion":"1.0.34","startTime":ts(0),"context":{"cwd":"/w"}},"id":"e0","timestamp":ts(0),"parentId":null}).to_string(),
    ];
    let mut model = models[0];
    // Output each model spent in the running process.
    let mut spent = [0u64; 3];
    for step in 0..steps {
        let minute = step as u64 * 2;
        let id = format!("e{step}");
        match rng.below(30) {
            0 => {
                let i = rng.below(3) as usize;
                model = models[i];
                out.push(json!({"type":"session.model_change","data":{"newModel":model},"id":id,"timestamp":ts(minute),"parentId":null}).to_string());
                continue;
            }
            1 | 2 => {
                // The process ends: a shutdown with its own totals, or killed (nothing).
                if rng.chance(70) {
                    let mut metrics = serde_json::Map::new();
                    for (i, m) in models.iter().enumerate() {
                        if spent[i] == 0 && !rng.chance(10) {
                            continue;
                        }
                        let input = rng.below(400_000);
                        let read = rng.below(input + 1);
                        metrics.insert((*m).to_owned(), json!({"requests":{"count":rng.below(20),"cost":rng.below(3)},"usage":{"inputTokens":number(rng, input),"outputTokens":spent[i] + rng.below(50),"cacheReadTokens":read,"cacheWriteTokens":rng.below(900),"reasoningTokens":rng.below(spent[i] + 1)}}));
                    }
                    out.push(json!({"type":"session.shutdown","data":{"shutdownType":"routine","totalPremiumRequests":2,"modelMetrics":metrics,"currentModel":model,"currentTokens":rng.below(90_000)},"id":id,"timestamp":ts(minute),"parentId":null}).to_string());
                }
                spent = [0; 3];
                out.push(json!({"type":"session.resume","data":{"resumeTime":ts(minute + 1),"eventCount":step},"id":format!("r{step}"),"timestamp":ts(minute + 1),"parentId":null}).to_string());
                continue;
            }
            3 => {
                let input = rng.below(200_000);
                let usage = if rng.chance(50) {
                    json!({"input":input,"output":rng.below(5000),"cachedInput":rng.below(input + 1)})
                } else {
                    json!({"inputTokens":input,"outputTokens":rng.below(5000),"cacheReadTokens":rng.below(input + 1),"cacheWriteTokens":rng.below(10),"model":"gpt-5-mini"})
                };
                out.push(json!({"type":"session.compaction_complete","data":{"success":true,"preCompactionTokens":150_000 + rng.below(30_000),"compactionTokensUsed":usage,"summaryContent":"so far"},"id":id,"timestamp":ts(minute),"parentId":null}).to_string());
                continue;
            }
            4 => {
                out.push(
                    r#"{"type":"assistant.message","data":{"messageId":"torn","outputTokens":5"#
                        .to_owned(),
                );
                continue;
            }
            5 => {
                out.push(String::new());
                continue;
            }
            6 => {
                // Before 1.0: no token field.
                out.push(json!({"type":"assistant.message","data":{"messageId":id,"content":"old"},"id":id,"timestamp":ts(minute),"parentId":null}).to_string());
                continue;
            }
            _ => {}
        }
        out.push(json!({"type":"user.message","data":{"content":"do it","transformedContent":"do it"},"id":format!("u{step}"),"timestamp":ts(minute),"parentId":null}).to_string());
        let output = rng.below(900);
        if let Some(i) = models.iter().position(|m| *m == model) {
            spent[i] += output;
        }
        out.push(json!({"type":"assistant.message","data":{"messageId":id,"content":"ok","toolRequests":[],"outputTokens":number(rng, output)},"id":id,"timestamp":ts(minute + 1),"parentId":null}).to_string());
        out.push(json!({"type":"tool.execution_complete","data":{"toolCallId":"t","model":model,"success":true,"result":{"content":"done"}},"id":format!("t{step}"),"timestamp":ts(minute + 1),"parentId":null}).to_string());
    }
    out
}

/// Kimi Code: `usage.record` lines (turn scope, and now and then the session-scope compaction
/// call), each echoed by a `step.end` event that must not count, records without usage or
/// time, odd values, and lines that are not JSON.
fn kimi(rng: &mut Rng, steps: usize) -> Vec<String> {
    let models = ["moonshot-ai/kimi-k2.7-code", "kimi-k2-thinking"];
    let mut out = vec![
        json!({"type":"metadata","protocol_version":"1.4","created_at":1_785_612_803_281_u64})
            .to_string(),
        json!({"type":"config.update","cwd":"/p","time":1_785_612_803_281_u64}).to_string(),
    ];
    for step in 0..steps {
        let time = 1_785_612_803_281 + step as u64 * 97_000;
        let [input, output, cache_read] = [12_000, 900, 40_000].map(|n| rng.below(n));
        let cache_creation = rng.below(3) * rng.below(500);
        let usage = json!({
            "inputOther": number(rng, input),
            "output": number(rng, output),
            "inputCacheRead": number(rng, cache_read),
            "inputCacheCreation": number(rng, cache_creation),
        });
        out.push(json!({"type":"context.append_loop_event","event":{"type":"step.end","usage":usage.clone()},"time":time}).to_string());
        let scope = if rng.chance(6) { "session" } else { "turn" };
        let model = models[rng.below(2) as usize];
        match rng.below(30) {
            0 => out.push(json!({"type":"usage.record","model":model,"usageScope":scope,"time":time}).to_string()),
            1 => out.push(json!({"type":"usage.record","model":model,"usage":usage,"usageScope":scope}).to_string()),
            2 => out.push("{\"type\":\"usage.record\",\"usage\":".to_owned()),
            3 => out.push(json!({"type":"usage.record","usage":{"inputOther":-4,"output":null},"usageScope":"turn","time":format!("{time}")}).to_string()),
            _ => out.push(json!({"type":"usage.record","model":model,"usage":usage,"usageScope":scope,"time":time}).to_string()),
        }
    }
    out
}
