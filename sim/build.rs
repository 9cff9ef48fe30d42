//! Refuse to build without `--cfg madsim`, with one message saying what to
//! add to `.cargo/config.toml` (instead of the crate's compile errors).

fn main() {
    println!("cargo::rustc-check-cfg=cfg(madsim)");
    if std::env::var_os("CARGO_CFG_MADSIM").is_none() {
        eprintln!("\nerror: {}", include_str!("madsim-missing.txt"));
        std::process::exit(1);
    }
}
