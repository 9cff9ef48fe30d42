//! temporary
fn main() {
    for p in std::env::args().skip(1) {
        let mut out = Vec::new();
        let code = percsim_checker::run_check_file(std::path::Path::new(&p), false, &mut out);
        println!(
            "===== {p} => exit {code}\n{}",
            String::from_utf8_lossy(&out)
        );
    }
}
