//! `set_page_size` and `free_memory_promptly`: what `percsim check` asks
//! of the kernel and of its allocator first.

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

/// mimalloc's option number `MI_OPTION_PURGE_DELAY` is its purge delay (the
/// only option whose default is 1,000 ms), and `free_memory_promptly` sets
/// it to 0 unless the environment set it (this test binary runs alone in
/// its own process; the option is read as the allocator has it).
#[test]
fn freed_memory_goes_back_at_once_unless_the_environment_says() {
    use libmimalloc_sys::mi_option_get;
    use percsim_checker::MI_OPTION_PURGE_DELAY as PURGE_DELAY;
    let from_env = std::env::var("MIMALLOC_PURGE_DELAY").ok();
    // SAFETY: reads one of mimalloc's options by its number.
    let before = unsafe { mi_option_get(PURGE_DELAY) };
    let expected_before = from_env.as_deref().map_or(1000, |v| v.parse().unwrap());
    assert_eq!(
        before, expected_before,
        "option {PURGE_DELAY} is not the purge delay"
    );
    let set = percsim_checker::free_memory_promptly();
    assert_eq!(set, from_env.is_none());
    // SAFETY: as above.
    let after = unsafe { mi_option_get(PURGE_DELAY) };
    assert_eq!(after, if set { 0 } else { expected_before });
}
