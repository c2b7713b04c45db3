//! Locking that outlives a panicking responder.

use std::sync::{Mutex, MutexGuard};

/// Locks a mutex, ignoring poisoning (a panicking responder must not wedge the server).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
