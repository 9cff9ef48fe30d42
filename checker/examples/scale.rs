//! Scaling benchmark for the checker.
//!
//! ```text
//! cargo run --release -p percsim-checker --example scale -- 10000 100000 1000000
//! cargo run --release -p percsim-checker --example scale -- --files
//! cargo run --release -p percsim-checker --example scale -- --files --long
//! ```
//!
//! For each size it generates a valid history (deterministic: two reads and
//! two writes per transaction over a key space of n/4 cells, unique values so
//! the dependency-graph rule runs, a few aborted and unknown outcomes,
//! overlapping real-time intervals).
//!
//! In memory (the default) it times `check`, and for sizes up to 100k also
//! `parse` of the history as a JSON string; peak memory is the process's
//! VmHWM, reset before each size where the kernel allows it.
//!
//! With `--files` (1M transactions, and 10M as well with `--long`, which
//! takes minutes and about 5 GB of disk) it writes each history to a file as it generates it, then
//! checks the file end to end (read, parse, every rule: what `percsim check`
//! does) in a child process, and prints that child's wall and CPU time and
//! peak memory, and whether transparent huge pages were turned off for it
//! (`small`, under `PERCSIM_HUGE_PAGES=0`, see `set_page_size`) or left as
//! the system sets them (`as set`, as `percsim check` does by default). `--write N FILE`
//! only writes a file; `--check FILE` is the child.

use percsim_checker::{
    CellState, FORMAT, FinalState, History, Op, Outcome, Transaction, Version, VersionKind, check,
    parse,
};
use std::time::Instant;

// The allocator `percsim check` uses (small strings cost less than with the system's).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// splitmix64: a small deterministic generator.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Transactions run in timestamp order (each sees every earlier commit), but
/// their real-time intervals overlap with the next two: a valid history.
fn generate(n: u64) -> History {
    let mut transactions = Vec::with_capacity(n as usize);
    let final_state = generate_each(n, |t| transactions.push(t));
    History {
        format: FORMAT.into(),
        model: None,
        seed: n,
        scenario: scenario(n),
        transactions,
        events: vec![],
        final_state,
        observers: Vec::new(),
    }
}

fn scenario(n: u64) -> serde_json::Value {
    serde_json::json!({"name": "scale", "transactions": n})
}

/// The same history written to `path` as it is generated (the transactions
/// are never all in memory).
fn generate_file(n: u64, path: &std::path::Path) -> std::io::Result<()> {
    use std::io::Write;
    let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
    write!(
        out,
        "{{\"format\":\"{FORMAT}\",\"seed\":{n},\"scenario\":{},\"transactions\":[",
        scenario(n)
    )?;
    let mut first = true;
    let mut error = None;
    let final_state = generate_each(n, |t| {
        let sep = if std::mem::take(&mut first) { "" } else { "," };
        let r = write!(out, "{sep}")
            .and_then(|()| serde_json::to_writer(&mut out, &t).map_err(std::io::Error::other));
        if let Err(e) = r {
            error.get_or_insert(e);
        }
    });
    if let Some(e) = error {
        return Err(e);
    }
    write!(out, "],\"events\":[],\"final_state\":")?;
    serde_json::to_writer(&mut out, &final_state).map_err(std::io::Error::other)?;
    write!(out, "}}")?;
    out.flush()
}

/// Generate `n` transactions, handing each to `emit`; returns the store.
fn generate_each(n: u64, mut emit: impl FnMut(Transaction)) -> FinalState {
    let keys = (n / 4).max(16);
    let mut rng = Rng(n);
    let mut latest: Vec<Option<u32>> = vec![None; keys as usize]; // index into values
    let mut values: Vec<String> = Vec::new();
    let mut versions: Vec<Vec<Version>> = vec![Vec::new(); keys as usize];
    let row = |k: u64| format!("r{k}");
    for i in 0..n {
        let start = 2 * i + 1;
        let commit = 2 * i + 2;
        let invoke = 100 * i;
        let fate = rng.below(100);
        let outcome = match fate {
            0..94 => Outcome::Committed,
            94..98 => Outcome::Aborted,
            _ => Outcome::Unknown,
        };
        // Unknown outcomes are resolved: even ones committed, odd ones rolled back.
        let commits = outcome == Outcome::Committed || (outcome == Outcome::Unknown && i % 2 == 0);
        let (a, b) = (rng.below(keys), rng.below(keys));
        let c = rng.below(keys);
        let mut ops = Vec::with_capacity(4);
        for k in [a, b] {
            let value = latest[k as usize].map(|v| values[v as usize].clone());
            ops.push(Op::Read {
                row: row(k),
                col: "v".into(),
                value,
            });
        }
        let mut writes = vec![a];
        if c != a {
            writes.push(c);
        }
        for (j, &k) in writes.iter().enumerate() {
            let value = format!("v{i}_{j}");
            ops.push(Op::Write {
                row: row(k),
                col: "v".into(),
                value: value.clone(),
            });
            if commits {
                versions[k as usize].push(Version {
                    start_ts: start,
                    commit_ts: commit,
                    kind: VersionKind::Put,
                    value: Some(value.clone()),
                    data_missing: false,
                });
                values.push(value);
                latest[k as usize] = Some(values.len() as u32 - 1);
            } else {
                versions[k as usize].push(Version {
                    start_ts: start,
                    commit_ts: start,
                    kind: VersionKind::Rollback,
                    value: None,
                    data_missing: false,
                });
            }
        }
        emit(Transaction {
            id: i,
            client: i % 64,
            start_ts: start,
            commit_ts: (outcome == Outcome::Committed).then_some(commit),
            invoke_ns: invoke,
            complete_ns: (outcome != Outcome::Unknown).then_some(invoke + 250),
            outcome,
            abort_reason: None,
            ops,
            scans: Vec::new(),
            observer: None,
        });
    }
    drop(values);
    FinalState {
        cells: versions
            .into_iter()
            .enumerate()
            .filter(|(_, v)| !v.is_empty())
            .map(|(k, versions)| CellState {
                row: row(k as u64),
                col: "v".into(),
                versions,
            })
            .collect(),
        locks: vec![],
        notify: Vec::new(),
    }
}

fn status(field: &str) -> String {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .map(|l| l[field.len()..].trim().to_string())
        })
        .unwrap_or_else(|| "n/a".to_string())
}

/// End to end on a file, in a child process so that its peak memory is the
/// check's alone: generate the history into a file, then run
/// `run_check_file` (read, parse, every rule) on it, as `percsim check` does.
fn from_files(sizes: &[u64]) {
    println!(
        "{:>9} {:>10} {:>10} {:>12} {:>11} {:>13} {:>6}",
        "txns", "file", "generate", "check (e2e)", "check CPU", "peak (HWM)", "pages"
    );
    let exe = std::env::current_exe().expect("own path");
    for &n in sizes {
        let path = std::env::temp_dir().join(format!("percsim-scale-{n}.json"));
        let t = Instant::now();
        generate_file(n, &path).expect("write the history");
        let generate_s = t.elapsed().as_secs_f64();
        let size_mb = std::fs::metadata(&path).map_or(0, |m| m.len()) / 1_000_000;
        let out = std::process::Command::new(&exe)
            .arg("--check")
            .arg(&path)
            .output()
            .expect("run the check");
        let child = String::from_utf8_lossy(&out.stdout);
        let mut parts = child.split_whitespace();
        let (secs, peak) = (parts.next().unwrap_or("?"), parts.next().unwrap_or("?"));
        let cpu = parts.next().unwrap_or("?");
        let pages = parts.next().unwrap_or("?");
        println!(
            "{n:>9} {size_mb:>8}MB {generate_s:>9.1}s {secs:>11}s {cpu:>10}s {peak:>11}MB {pages:>6}"
        );
        if !out.status.success() {
            println!(
                "  the check failed: {child}{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let _ = std::fs::remove_file(&path);
    }
}

/// The child of [`from_files`]: check `path`, print seconds and peak MB.
fn check_file(path: &str) -> std::process::ExitCode {
    // What `percsim check` does first.
    let small_pages = percsim_checker::set_page_size();
    percsim_checker::free_memory_promptly();
    let t = Instant::now();
    let mut report = Vec::new();
    let code = percsim_checker::run_check_file(std::path::Path::new(path), false, &mut report);
    let secs = t.elapsed().as_secs_f64();
    let peak_kb: f64 = status("VmHWM:")
        .trim_end_matches("kB")
        .trim()
        .parse()
        .unwrap_or(f64::NAN);
    // CPU seconds (user + system) from /proc/self/stat, in clock ticks of 10 ms.
    let cpu = std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|s| {
            let fields: Vec<&str> = s.rsplit_once(')')?.1.split_whitespace().collect();
            let ticks = |i: usize| fields.get(i)?.parse::<f64>().ok();
            Some((ticks(11)? + ticks(12)?) / 100.0)
        })
        .unwrap_or(f64::NAN);
    let pages = if small_pages { "small" } else { "as set" };
    println!("{secs:.2} {:.0} {cpu:.2} {pages}", peak_kb / 1024.0);
    if code != 0 {
        println!("{}", String::from_utf8_lossy(&report));
        return std::process::ExitCode::FAILURE;
    }
    std::process::ExitCode::SUCCESS
}

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [flag, path] = args.as_slice()
        && flag == "--check"
    {
        return check_file(path);
    }
    if let [flag, n, path] = args.as_slice()
        && flag == "--write"
    {
        let n: u64 = n.parse().expect("a transaction count");
        generate_file(n, std::path::Path::new(path)).expect("write the history");
        return std::process::ExitCode::SUCCESS;
    }
    let sizes: Vec<u64> = args.iter().filter_map(|a| a.parse().ok()).collect();
    if args.iter().any(|a| a == "--files") {
        let long = args.iter().any(|a| a == "--long");
        from_files(match (sizes.is_empty(), long) {
            (false, _) => &sizes,
            (true, false) => &[1_000_000],
            (true, true) => &[1_000_000, 10_000_000],
        });
        return std::process::ExitCode::SUCCESS;
    }
    in_memory(sizes);
    std::process::ExitCode::SUCCESS
}

fn in_memory(sizes: Vec<u64>) {
    let sizes = if sizes.is_empty() {
        vec![10_000, 100_000, 1_000_000]
    } else {
        sizes
    };
    println!(
        "{:>9} {:>10} {:>10} {:>10} {:>14} {:>12} {:>12}",
        "txns", "generate", "check", "parse", "history (RSS)", "peak (HWM)", "graph edges"
    );
    for n in sizes {
        // Reset the peak-RSS counter (Linux; harmless where unsupported).
        let _ = std::fs::write("/proc/self/clear_refs", "5");
        let t = Instant::now();
        let history = generate(n);
        let generate_s = t.elapsed().as_secs_f64();
        let history_rss = status("VmRSS:");

        let parse_s = if n <= 100_000 {
            let json = serde_json::to_string(&history).expect("serializable");
            let t = Instant::now();
            let parsed = parse(&json).expect("valid history");
            let s = t.elapsed().as_secs_f64();
            assert_eq!(parsed.transactions.len(), history.transactions.len());
            format!("{s:.3}s")
        } else {
            "-".to_string()
        };

        let t = Instant::now();
        let report = check(&history);
        let check_s = t.elapsed().as_secs_f64();
        assert!(report.passed(), "{}", report.render_text());
        println!(
            "{:>9} {:>9.3}s {:>9.3}s {:>10} {:>14} {:>12} {:>12}",
            n,
            generate_s,
            check_s,
            parse_s,
            history_rss,
            status("VmHWM:"),
            report.stats.graph_edges
        );
    }
}
