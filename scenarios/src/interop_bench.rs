//! The import checker's speed: a generated list-append history in Elle's
//! EDN format, read and checked by `percsim check`'s EDN path.

use rand::RngExt;
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;
use std::fmt::Write as _;
use std::time::Instant;

/// Keys alive at once, and transactions before the window of keys moves on
/// (so lists stay short, as in Jepsen's list-append test).
const KEYS_ALIVE: u64 = 10;
const TXNS_PER_WINDOW: u64 = 50;

/// A serializable list-append history of `n` transactions on three
/// overlapping processes, executed in order against lists kept here.
pub fn generate(n: u64, seed: u64) -> String {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut lists: std::collections::HashMap<u64, Vec<u64>> = Default::default();
    let mut next_elem = 0u64;
    let mut out = String::with_capacity(n as usize * 200);
    for i in 0..n {
        let window = i / TXNS_PER_WINDOW;
        let mut invoke = Vec::new();
        let mut done = Vec::new();
        for _ in 0..rng.random_range(1..=4u32) {
            let k = window * KEYS_ALIVE + rng.random_range(0..KEYS_ALIVE);
            if rng.random_bool(0.5) {
                next_elem += 1;
                lists.entry(k).or_default().push(next_elem);
                invoke.push(format!("[:append {k} {next_elem}]"));
                done.push(format!("[:append {k} {next_elem}]"));
            } else {
                let l = lists
                    .get(&k)
                    .map(|l| l.iter().map(u64::to_string).collect::<Vec<_>>().join(" "));
                invoke.push(format!("[:r {k} nil]"));
                done.push(match l {
                    Some(l) => format!("[:r {k} [{l}]]"),
                    None => format!("[:r {k} nil]"),
                });
            }
        }
        let p = i % 3;
        // Invocations every 10 ns, each taking 25: three in flight at once.
        let _ = writeln!(
            out,
            "{{:index {}, :time {}, :type :invoke, :process {p}, :f :txn, :value [{}]}}",
            2 * i,
            10 * i,
            invoke.join(" ")
        );
        let _ = writeln!(
            out,
            "{{:index {}, :time {}, :type :ok, :process {p}, :f :txn, :value [{}]}}",
            2 * i + 1,
            10 * i + 25,
            done.join(" ")
        );
    }
    out
}

/// Prints how fast a generated `n`-transaction history is read and checked.
pub fn import_speed(n: u64) {
    let text = generate(n, 7);
    let started = Instant::now();
    let history = match percsim_checker::parse_elle(&text) {
        Ok(h) => h,
        Err(e) => {
            println!("elle import: the generated history does not parse: {e}");
            return;
        }
    };
    let parsed = started.elapsed().as_secs_f64();
    let report = percsim_checker::check_elle(&history);
    let total = started.elapsed().as_secs_f64();
    println!(
        "elle list-append import, {} transactions ({:.1} MB of EDN): read {parsed:.2} s, checked {:.2} s, {:.0} transactions/s, verdict {}",
        history.len(),
        text.len() as f64 / 1e6,
        total - parsed,
        history.len() as f64 / total,
        if report.passed() { "pass" } else { "FAIL" }
    );
}
