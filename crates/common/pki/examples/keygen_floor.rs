//! The key-generation floor for the `create ignition-configs` benchmark:
//! generates N RSA-2048 keys (default 25) with the same parallel generator the
//! installer uses, R times (default 5), and prints each wall time and the median.
//!
//! Usage: `keygen_floor [N] [R]`.

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(25);
    let runs: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(5);
    let mut times = Vec::new();
    for _ in 0..runs {
        let t = std::time::Instant::now();
        let keys = okd_pki::generate_keys(n).expect("key generation");
        assert_eq!(keys.len(), n);
        times.push(t.elapsed().as_secs_f64());
    }
    let mut sorted = times.clone();
    sorted.sort_by(f64::total_cmp);
    let median = sorted[sorted.len() / 2];
    let list: Vec<String> = times.iter().map(|t| format!("{t:.3}")).collect();
    println!(
        "{n} RSA-2048 keys, {runs} runs: {} s; median {median:.3}s",
        list.join(" ")
    );
}
