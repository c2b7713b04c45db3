//! What a step may know of the rest of the build: compact indexes ([`View`]s) that the
//! engine fills in one first pass over the source, item by item as loaded, before any step
//! runs. A view keeps only what its step draws from (keys, hashes, short strings), never the
//! items themselves, so memory grows with the view, not with the source; each view documents
//! its bytes per item. The steps declare the views they read ([`crate::Step::views`]); the
//! corpus names no step's data.

use serde_json::{Map, Value};
use std::any::{type_name, Any, TypeId};
use std::collections::HashMap;
use std::sync::Arc;

/// An item of the build as loaded (before any step), as a view sees it in the first pass.
#[derive(Debug, Clone, Copy)]
pub struct Peer<'a> {
    pub id: &'a str,
    pub fields: &'a Map<String, Value>,
}

/// An index of the whole build that a step reads (a pool of answers, of values by kind, ...),
/// built by taking in every loaded item once, in source order. It must depend on the peers
/// only (and, for a keyed view, on what its key says), so that every item sees the same view.
pub trait View: Any + Send + Sync {
    /// Takes in one more item (source order).
    fn add(&mut self, peer: Peer<'_>);

    /// Called once after the last item: drops what only the pass needed (sets of what was
    /// seen).
    fn finish(&mut self) {}
}

/// A view a step declares, for the engine to fill ([`view`] makes one; [`view_keyed`] one
/// of several views of a type, told apart by their key).
#[derive(Clone)]
pub struct ViewSpec {
    id: TypeId,
    /// Which view of its type (empty for [`view`]'s): two declarations with one type and
    /// one key are one view.
    key: String,
    name: &'static str,
    new: Arc<dyn Fn() -> Box<dyn Filling> + Send + Sync>,
}

impl std::fmt::Debug for ViewSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.key.is_empty() {
            f.write_str(self.name)
        } else {
            write!(f, "{}({})", self.name, self.key)
        }
    }
}

/// The declaration of view `V` (one of its type).
pub fn view<V: View + Default>() -> ViewSpec {
    ViewSpec {
        id: TypeId::of::<V>(),
        key: String::new(),
        name: type_name::<V>(),
        new: Arc::new(|| Box::<V>::default()),
    }
}

/// The declaration of view `V` under `key`, made by `make`: a view whose parameters the
/// recipe gives (the fields a pool is drawn from), read back with [`Corpus::view_keyed`].
/// The key must say every parameter `make` uses, so that one key is one view.
pub fn view_keyed<V: View>(
    key: impl Into<String>,
    make: impl Fn() -> V + Send + Sync + 'static,
) -> ViewSpec {
    ViewSpec {
        id: TypeId::of::<V>(),
        key: key.into(),
        name: type_name::<V>(),
        new: Arc::new(move || Box::new(make())),
    }
}

/// A view being filled, with its type erased.
trait Filling: Send + Sync {
    fn add(&mut self, peer: Peer<'_>);
    fn done(self: Box<Self>) -> Arc<dyn Any + Send + Sync>;
}

impl<V: View> Filling for V {
    fn add(&mut self, peer: Peer<'_>) {
        View::add(self, peer);
    }

    fn done(mut self: Box<Self>) -> Arc<dyn Any + Send + Sync> {
        self.finish();
        Arc::new(*self)
    }
}

/// The first pass: the declared views, each taking in every item.
pub struct Indexer {
    views: Vec<((TypeId, String), Box<dyn Filling>)>,
}

impl Indexer {
    /// An indexer of the distinct views among `specs`.
    pub fn new(specs: impl IntoIterator<Item = ViewSpec>) -> Self {
        let mut views: Vec<((TypeId, String), Box<dyn Filling>)> = Vec::new();
        for s in specs {
            if views
                .iter()
                .all(|((id, key), _)| *id != s.id || *key != s.key)
            {
                views.push(((s.id, s.key.clone()), (s.new)()));
            }
        }
        Self { views }
    }

    /// Whether no view is wanted (the engine then makes no first pass, unless a progress display
    /// shows the number of items).
    pub fn is_empty(&self) -> bool {
        self.views.is_empty()
    }

    /// Takes in one loaded item.
    pub fn add(&mut self, id: &str, fields: &Map<String, Value>) {
        for (_, v) in &mut self.views {
            v.add(Peer { id, fields });
        }
    }

    /// The corpus of the filled views.
    pub fn finish(self) -> Corpus {
        Corpus {
            views: self
                .views
                .into_iter()
                .map(|(id, v)| (id, v.done()))
                .collect(),
        }
    }
}

/// The views of a build, filled by the first pass.
#[derive(Default)]
pub struct Corpus {
    views: HashMap<(TypeId, String), Arc<dyn Any + Send + Sync>>,
}

impl std::fmt::Debug for Corpus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Corpus({} views)", self.views.len())
    }
}

impl Corpus {
    /// The corpus of the items `peers` (id, fields) with the views `specs` (tests and small
    /// tools; the engine fills its views with an [`Indexer`] as the items stream by).
    pub fn of<'a>(
        specs: impl IntoIterator<Item = ViewSpec>,
        peers: impl IntoIterator<Item = (&'a str, &'a Map<String, Value>)>,
    ) -> Self {
        let mut ix = Indexer::new(specs);
        for (id, fields) in peers {
            ix.add(id, fields);
        }
        ix.finish()
    }

    /// The view `V`. A step reads only the views it declares in [`crate::Step::views`]: one
    /// it did not declare is a bug of that step, and stops the program naming the view.
    pub fn view<V: View>(&self) -> Arc<V> {
        self.view_keyed::<V>("")
    }

    /// The view `V` declared under `key` ([`view_keyed`]); as [`Corpus::view`], one not
    /// declared stops the program naming it.
    pub fn view_keyed<V: View>(&self, key: &str) -> Arc<V> {
        let Some(any) = self.views.get(&(TypeId::of::<V>(), key.to_owned())) else {
            panic!(
                "the view {}({key}) was not declared by the step that reads it (Step::views)",
                type_name::<V>()
            );
        };
        Arc::clone(any)
            .downcast::<V>()
            .unwrap_or_else(|_| unreachable!("a view is stored under its own type id"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Ids(Vec<String>);

    impl View for Ids {
        fn add(&mut self, peer: Peer<'_>) {
            self.0.push(peer.id.to_owned());
        }
    }

    #[test]
    fn a_declared_view_takes_in_every_item_once_and_is_shared() {
        let fields = Map::new();
        let c = Corpus::of(
            [view::<Ids>(), view::<Ids>()],
            [("a", &fields), ("b", &fields)],
        );
        let first = c.view::<Ids>();
        let again = c.view::<Ids>();
        assert_eq!(first.0, ["a", "b"]);
        assert!(Arc::ptr_eq(&first, &again));
        assert!(Indexer::new([]).is_empty());
    }

    /// Counts the items that have a field, the field named by the view's key.
    struct Having(&'static str, usize);

    impl View for Having {
        fn add(&mut self, peer: Peer<'_>) {
            self.1 += usize::from(peer.fields.contains_key(self.0));
        }
    }

    #[test]
    fn keyed_views_of_one_type_are_apart_and_one_key_is_one_view() {
        let a: Map<String, Value> = serde_json::from_str(r#"{"x": 1}"#).unwrap();
        let b: Map<String, Value> = serde_json::from_str(r#"{"x": 1, "y": 2}"#).unwrap();
        let c = Corpus::of(
            [
                view_keyed("x", || Having("x", 0)),
                view_keyed("y", || Having("y", 0)),
                view_keyed("x", || Having("x", 0)),
            ],
            [("a", &a), ("b", &b)],
        );
        assert_eq!(c.view_keyed::<Having>("x").1, 2);
        assert_eq!(c.view_keyed::<Having>("y").1, 1);
    }

    #[test]
    #[should_panic(expected = "was not declared")]
    fn an_undeclared_view_is_a_bug_named_at_once() {
        Corpus::default().view::<Ids>();
    }
}
