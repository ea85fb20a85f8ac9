//! Generated Gemini CLI and Qwen Code transcripts with the hazards their rules name: Gemini
//! records re-appended whole with growing tokens (and once with another model), records with
//! null tokens, `$set` metadata and `$set.messages` rewrites, `$rewindTo`, records without an
//! id; Qwen telemetry lines beside every call, assistant records repeated, thoughts inside the
//! candidates and (by the total) apart from them, compressions, records without usage.

use serde_json::{Value, json};

use super::{Rng, number, ts};

pub fn gemini(rng: &mut Rng, steps: usize) -> Vec<String> {
    let models = ["gemini-2.5-pro", "gemini-3-flash-preview"];
    let mut out = vec![
        json!({"sessionId":"0ab84937-9fe7","projectHash":"9da8b3df","startTime":ts(0),"lastUpdated":ts(0),"kind":"main"}).to_string(),
    ];
    let mut records: Vec<Value> = Vec::new();
    for step in 0..steps {
        let minute = step as u64 * 3;
        match rng.below(30) {
            0 => {
                out.push(json!({"$set":{"messages":[{"id":format!("new{step}"),"type":"gemini","tokens":null}]}}).to_string());
                continue;
            }
            1 if !records.is_empty() => {
                out.push(json!({"$rewindTo": records[0]["id"].clone()}).to_string());
                continue;
            }
            2 => {
                out.push(json!({"id":format!("ab{step}"),"timestamp":ts(minute),"type":"gemini","content":"","tokens":null,"model":models[0]}).to_string());
                continue;
            }
            3 => {
                out.push(r#"{"id":"torn","type":"gemini","tokens":{"input":5"#.to_owned());
                continue;
            }
            4 if !records.is_empty() => {
                // A record re-appended whole with more tokens (the last copy wins), sometimes
                // under another model or later time.
                let i = rng.below(records.len() as u64) as usize;
                let mut r = records[i].clone();
                let more = rng.below(300);
                r["tokens"]["output"] = json!(r["tokens"]["output"].as_u64().unwrap_or(0) + more);
                r["tokens"]["total"] = json!(r["tokens"]["total"].as_u64().unwrap_or(0) + more);
                if rng.chance(20) {
                    r["model"] = json!(models[1]);
                    r["timestamp"] = json!(ts(minute));
                }
                out.push(r.to_string());
                records[i] = r;
                continue;
            }
            _ => {}
        }
        out.push(json!({"id":format!("u{step}"),"timestamp":ts(minute),"type":"user","content":[{"text":"go"}]}).to_string());
        out.push(json!({"$set":{"lastUpdated":ts(minute)}}).to_string());
        let input = rng.below(40_000);
        let cached = rng.below(input + 1);
        let (output, thoughts, tool) = (rng.below(900), rng.below(700), rng.below(50));
        let model = models[rng.below(2) as usize];
        let id = if rng.chance(3) {
            Value::Null
        } else {
            json!(format!("g{step}"))
        };
        let r = json!({"id":id,"timestamp":ts(minute + 1),"type":"gemini","content":"ok","tokens":{"input":number(rng, input),"output":output,"cached":cached,"thoughts":thoughts,"tool":tool,"total":input + output + thoughts + tool},"model":model});
        out.push(r.to_string());
        if r["id"].is_string() {
            records.push(r);
        }
    }
    out
}

pub fn qwen(rng: &mut Rng, steps: usize) -> Vec<String> {
    let session = "69f0814a-8bfc";
    let mut out = vec![
        json!({"uuid":"root","parentUuid":null,"sessionId":session,"timestamp":ts(0),"type":"user","cwd":"/w","version":"0.18.1","message":{"role":"user","parts":[{"text":"hi"}]}}).to_string(),
    ];
    let mut assistants: Vec<String> = Vec::new();
    for step in 0..steps {
        let minute = step as u64 * 3;
        match rng.below(25) {
            0 => {
                out.push(json!({"uuid":format!("c{step}"),"sessionId":session,"timestamp":ts(minute),"type":"system","subtype":"chat_compression","systemPayload":{"info":{"originalTokenCount":90_000 + rng.below(1000),"newTokenCount":4000,"compressionStatus":1}}}).to_string());
                continue;
            }
            1 if !assistants.is_empty() => {
                let i = rng.below(assistants.len() as u64) as usize;
                out.push(assistants[i].clone());
                continue;
            }
            2 => {
                out.push(json!({"uuid":format!("e{step}"),"sessionId":session,"timestamp":ts(minute),"type":"assistant","model":"qwen3-coder-plus","message":{"role":"model","parts":[]}}).to_string());
                continue;
            }
            _ => {}
        }
        let prompt = rng.below(60_000);
        let cached = rng.below(prompt + 1);
        let thoughts = if rng.chance(50) { rng.below(400) } else { 0 };
        let candidates = thoughts + rng.below(800);
        // Gemini API back ends count thoughts apart from the candidates.
        let apart = rng.chance(30);
        let total = prompt + candidates + if apart { thoughts } else { 0 };
        out.push(json!({"uuid":format!("t{step}"),"sessionId":session,"timestamp":ts(minute),"type":"system","subtype":"ui_telemetry","systemPayload":{"uiEvent":{"event.name":"qwen-code.api_response","input_token_count":prompt,"output_token_count":candidates,"cached_content_token_count":cached,"thoughts_token_count":thoughts,"total_token_count":total}}}).to_string());
        let line = json!({"uuid":format!("a{step}"),"parentUuid":format!("t{step}"),"sessionId":session,"timestamp":ts(minute + 1),"type":"assistant","model":if rng.chance(70) {"qwen3-coder-plus"} else {"coder-model"},"message":{"role":"model","parts":[{"text":"ok"}]},"usageMetadata":{"promptTokenCount":number(rng, prompt),"candidatesTokenCount":candidates,"thoughtsTokenCount":thoughts,"totalTokenCount":total,"cachedContentTokenCount":cached}}).to_string();
        out.push(line.clone());
        assistants.push(line);
        out.push(json!({"uuid":format!("r{step}"),"sessionId":session,"timestamp":ts(minute + 1),"type":"tool_result","message":{"role":"user","parts":[{"functionResponse":{"name":"ls","response":{}}}]}}).to_string());
    }
    out
}
