//! `set_page_size`: what `percsim check` asks of the kernel first.

/// The process's transparent-huge-page flag, as the kernel reports it
/// (`None` where the kernel does not say).
#[cfg(target_os = "linux")]
fn thp_enabled() -> Option<bool> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("THP_enabled:"))?;
    Some(line.split_whitespace().nth(1)? == "1")
}

/// After the call, the kernel reports huge pages off for this process
/// exactly when `PERCSIM_HUGE_PAGES=0` asked for small pages (this test
/// binary runs alone in its own process).
#[cfg(target_os = "linux")]
#[test]
fn huge_pages_are_turned_off_only_when_asked() {
    let asked_for_small = std::env::var_os("PERCSIM_HUGE_PAGES").is_some_and(|v| v == "0");
    let took = percsim_checker::set_page_size();
    assert_eq!(took, asked_for_small);
    if let Some(enabled) = thp_enabled() {
        assert_eq!(enabled, !asked_for_small);
    }
}
