//! Locking the world's shared state.

use std::sync::{Mutex, MutexGuard};

/// Lock a mutex, ignoring poisoning (a panicking node does not stop the world).
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
