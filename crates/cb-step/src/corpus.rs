//! Every item of a build as loaded, seen by the steps of the other items, and the views that
//! offline rules derive from them: each view is a type the step crate defines
//! ([`View`]), computed once per build on first use. The corpus names no step's data.

use serde_json::{Map, Value};
use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// An item of the build as loaded (before any step).
#[derive(Debug, Clone)]
pub struct Peer {
    pub id: String,
    pub fields: Map<String, Value>,
}

/// Something derived from all the peers once per build (a pool of answers, of values by
/// kind, ...). It must depend on the peers only, so that every item sees the same view.
pub trait View: Any + Send + Sync {
    fn of(peers: &[Peer]) -> Self;
}

type Slot = Arc<OnceLock<Arc<dyn Any + Send + Sync>>>;

/// Every item of the build as loaded, in source order, and the views derived from them.
#[derive(Debug, Default)]
pub struct Corpus {
    pub peers: Vec<Peer>,
    views: Mutex<HashMap<TypeId, Slot>>,
}

impl Corpus {
    pub fn new(peers: Vec<Peer>) -> Self {
        Self {
            peers,
            ..Default::default()
        }
    }

    /// The view `V` of the peers, computed on the first call (other callers wait for it).
    pub fn view<V: View>(&self) -> Arc<V> {
        let slot = Arc::clone(
            self.views
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .entry(TypeId::of::<V>())
                .or_default(),
        );
        let any = slot.get_or_init(|| Arc::new(V::of(&self.peers)));
        Arc::clone(any)
            .downcast::<V>()
            .expect("a slot holds the type it is keyed by")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    static BUILT: AtomicUsize = AtomicUsize::new(0);

    struct Ids(Vec<String>);

    impl View for Ids {
        fn of(peers: &[Peer]) -> Self {
            BUILT.fetch_add(1, Ordering::SeqCst);
            Self(peers.iter().map(|p| p.id.clone()).collect())
        }
    }

    #[test]
    fn a_view_is_derived_once_and_shared() {
        let peer = |id: &str| Peer {
            id: id.into(),
            fields: Map::new(),
        };
        let c = Corpus::new(vec![peer("a"), peer("b")]);
        let first = c.view::<Ids>();
        let again = c.view::<Ids>();
        assert_eq!(first.0, ["a", "b"]);
        assert!(Arc::ptr_eq(&first, &again));
        assert_eq!(BUILT.load(Ordering::SeqCst), 1);
    }
}
