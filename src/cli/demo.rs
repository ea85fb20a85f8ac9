//! `agentlog demo [DIR]`: the embedded default. Writes a realistic lingtai-shaped agent
//! directory through the writer, then answers "tokens since the last molt" with each tier and
//! shows what the index saves; then Claude Code and Codex transcripts with `usage`,
//! `statusline`, `search --transcripts` and `transcript` on them (`super::demo_transcripts`).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use agentlog::generation::{GenerationRequest, Tier, current_generation_at, generations_at};
use agentlog::index::{Writer, WriterOptions};
use agentlog::log::SyncPolicy;
use agentlog::synth::{SynthOptions, write_lingtai_log};

use super::table::{header, render, thousands};
use super::{EXIT_FAILURE, EXIT_OK, Failure, agent_paths};

#[derive(clap::Args)]
pub struct Args {
    /// Where to write the agent directory (must not hold a log yet). Default: a new
    /// directory under the system's temp dir, kept so you can run the other commands on it.
    dir: Option<PathBuf>,
    /// Number of LLM responses to generate (each comes with calls, tool events, ...).
    #[arg(long, default_value_t = 20_000)]
    responses: u64,
    /// Seed of the generator.
    #[arg(long, default_value_t = 42)]
    seed: u64,
}

fn io(context: &str) -> impl Fn(std::io::Error) -> Failure + '_ {
    move |e| Failure::new("io_error", EXIT_FAILURE, format!("{context}: {e}"))
}

pub fn run(args: &Args) -> Result<u8, Failure> {
    let dir = match &args.dir {
        Some(dir) => dir.clone(),
        None => tempfile::Builder::new()
            .prefix("agentlog-demo-")
            .tempdir()
            .map_err(io("cannot create a temp dir"))?
            .keep(),
    };
    let paths = agent_paths(&dir);
    if paths.log.exists() {
        return Err(Failure::new(
            "exists",
            EXIT_FAILURE,
            format!(
                "{} already has a log; give the demo an empty directory",
                dir.display()
            ),
        ));
    }
    eprintln!(
        "writing a lingtai-shaped agent log to {} ...",
        dir.display()
    );
    let options = SynthOptions {
        seed: args.seed,
        responses: args.responses,
        ..SynthOptions::default()
    };
    let mut generated = Vec::new();
    let summary = write_lingtai_log(&mut generated, &options).map_err(io("cannot generate"))?;
    let started = Instant::now();
    let mut writer = Writer::open(
        &paths,
        WriterOptions {
            sync: SyncPolicy::None,
            ..WriterOptions::default()
        },
    )?;
    let lines: Vec<&[u8]> = generated
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    for chunk in lines.chunks(1024) {
        writer.append_batch_json(chunk)?;
    }
    let boundaries = writer.state().boundaries;
    writer.close()?;
    let write_time = started.elapsed();
    std::fs::write(
        dir.join(".agent.json"),
        format!(
            "{{\"agent_name\": \"{}\", \"molt_count\": {}}}\n",
            options.agent, summary.molt_count
        ),
    )
    .map_err(io("cannot write .agent.json"))?;
    outln!(
        "wrote {} events ({} MB) in {} generations through the writer, index kept current: {:.2} s\n",
        thousands(summary.lines),
        thousands(summary.bytes / 1_000_000),
        boundaries + 1,
        write_time.as_secs_f64()
    );

    let request = GenerationRequest::expecting(summary.molt_count);
    let current = current_generation_at(&paths, &request)?;
    outln!(
        "agentlog status {} (generation {} from .agent.json)",
        dir.display(),
        summary.molt_count
    );
    let t = &current.totals;
    out!(
        "{}",
        render(&[
            header(&[
                "tier",
                "api_calls",
                "input",
                "cached",
                "output",
                "thinking",
                "boundary"
            ]),
            vec![
                current.tier.to_string(),
                thousands(t.api_calls),
                thousands(t.input_tokens),
                thousands(t.cached_tokens),
                thousands(t.output_tokens),
                thousands(t.thinking_tokens),
                format!(
                    "{} @ {}",
                    current.boundary_initiator(),
                    current.boundary.as_ref().map_or(0, |b| b.offset)
                ),
            ],
        ])
    );

    outln!("\nagentlog generations (first 5 and last)");
    let generations = generations_at(&paths, &request)?;
    let mut rows = vec![header(&[
        "gen",
        "molt_count",
        "initiator",
        "api_calls",
        "input",
    ])];
    let all = &generations.generations;
    for g in all.iter().take(5).chain(all.iter().skip(5).last()) {
        rows.push(vec![
            g.ordinal.to_string(),
            g.molt_count.map_or("-".into(), |n| n.to_string()),
            g.initiator().to_owned(),
            thousands(g.totals.api_calls),
            thousands(g.totals.input_tokens),
        ]);
    }
    out!("{}", render(&rows));

    outln!("\nthe same question, answered by each tier (fresh open each time, median of 5):");
    let mut rows = vec![header(&["tier", "time", "log bytes read", "agrees"])];
    let mut disagreeing = Vec::new();
    for tier in [Tier::Index, Tier::ReverseScan, Tier::FullScan] {
        let mut request = request.clone();
        request.start_tier = tier;
        let (time, answer) = median_time(&paths, &request)?;
        rows.push(vec![
            format!(
                "{tier}{}",
                if answer.tier == tier {
                    String::new()
                } else {
                    format!(" -> {}", answer.tier)
                }
            ),
            format_duration(time),
            thousands(answer.bytes_read),
            if answer.totals == current.totals {
                "yes".into()
            } else {
                disagreeing.push(tier.to_string());
                "NO".into()
            },
        ]);
    }
    out!("{}", render(&rows));
    // The tiers share one extractor and one fold: any disagreement is a bug, so the demo (which
    // CI runs) fails loudly rather than printing a table someone has to read.
    if !disagreeing.is_empty() {
        return Err(Failure::new(
            "tiers_disagree",
            EXIT_FAILURE,
            format!(
                "the {} tier disagreed with the index's answer for {}",
                disagreeing.join(" and "),
                dir.display()
            ),
        ));
    }
    outln!(
        "\n(the index answers from two stored values after checking 128 KiB of the log; \
         the reverse scan reads up to 8 MiB; the full scan reads every line)"
    );
    outln!(
        "\ntry: agentlog status {d} --json | agentlog generations {d} | agentlog verify {d} --deep",
        d = dir.display()
    );

    // The main job for most people: their agents' transcripts.
    let now = jiff::Timestamp::now();
    eprintln!(
        "\nwriting Claude Code and Codex transcripts (with compactions) to {} ...",
        dir.join("transcripts").display()
    );
    let written = super::demo_transcripts::write_transcripts(&dir, now)?;
    super::demo_transcripts::show(&dir, &written, now)?.finish()?;
    outln!(
        "\nevery figure above agrees with a direct count of the generated transcripts; \
         indexes are in {d}/index and {d}/search-index, nothing was written elsewhere",
        d = dir.display()
    );
    Ok(EXIT_OK)
}

fn median_time(
    paths: &agentlog::log::LogPaths,
    request: &GenerationRequest,
) -> Result<(Duration, agentlog::generation::CurrentGeneration), Failure> {
    let mut times = Vec::new();
    let mut last = None;
    for _ in 0..5 {
        let started = Instant::now();
        let answer = current_generation_at(paths, request)?;
        times.push(started.elapsed());
        last = Some(answer);
    }
    times.sort();
    let answer = last.ok_or_else(|| Failure::new("internal", EXIT_FAILURE, "no run"))?;
    Ok((times[times.len() / 2], answer))
}

fn format_duration(d: Duration) -> String {
    let micros = d.as_secs_f64() * 1e6;
    if micros < 1_000.0 {
        format!("{micros:.0} µs")
    } else {
        format!("{:.1} ms", micros / 1_000.0)
    }
}
