//! `use_small_pages`: what `percsim check` asks of the kernel first.

/// The process's transparent-huge-page flag, as the kernel reports it
/// (`None` where the kernel does not say).
#[cfg(target_os = "linux")]
fn thp_enabled() -> Option<bool> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("THP_enabled:"))?;
    Some(line.split_whitespace().nth(1)? == "1")
}

/// After the call, the kernel reports huge pages off for this process
/// (this test binary runs alone in its own process).
#[cfg(target_os = "linux")]
#[test]
fn huge_pages_are_turned_off_unless_asked_for() {
    let asked_for_huge = std::env::var_os("PERCSIM_HUGE_PAGES").is_some_and(|v| v == "1");
    let took = percsim_checker::use_small_pages();
    assert_eq!(took, !asked_for_huge);
    if let Some(enabled) = thp_enabled() {
        assert_eq!(enabled, asked_for_huge);
    }
}
