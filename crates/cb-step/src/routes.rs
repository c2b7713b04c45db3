//! One recipe's routing table, decided when the command and its recipes load: which layer
//! answers each step, who reads each reader check, and what each model's calls came to.
//! The steps, the reader check, the engine's accounting (build line, `runs.jsonl`, manifest,
//! card) and the CLI's dry run and signal handler all ask it; none works routing out again.

use cb_llm::{Llm, Role, StatsSnapshot};
use std::collections::BTreeMap;

/// The routes of one recipe (see the module documentation). Cheap to clone.
#[derive(Debug, Clone)]
pub struct Routes {
    writer: Llm,
    /// The build's reader and who it is (`Role::Writer`: the writer reads its own rows).
    reader: Option<(Role, Llm)>,
    /// Steps that call a named model: step -> its name and layer.
    steps: BTreeMap<String, (String, Llm)>,
    /// Reader checks with a panel (`readers = [...]`): step -> names and layers, in order.
    panels: BTreeMap<String, Vec<(String, Llm)>>,
}

impl Routes {
    /// Every call goes to `writer`, and nobody reads.
    pub fn new(writer: Llm) -> Self {
        Self {
            writer,
            reader: None,
            steps: BTreeMap::new(),
            panels: BTreeMap::new(),
        }
    }

    /// The build's reader is `llm`, answering as `who`.
    pub fn set_reader(&mut self, who: Role, llm: Llm) {
        self.reader = Some((who, llm));
    }

    /// Step `step` calls the named model `name` through `llm`.
    pub fn set_step(&mut self, step: &str, name: &str, llm: Llm) {
        self.steps.insert(step.to_owned(), (name.to_owned(), llm));
    }

    /// The reader check `step` reads with the panel `readers` (names and layers, in order).
    pub fn set_panel(&mut self, step: &str, readers: Vec<(String, Llm)>) {
        self.panels.insert(step.to_owned(), readers);
    }

    /// The build's own model: every call no other route takes.
    pub fn writer(&self) -> &Llm {
        &self.writer
    }

    /// The build's reader (`None`: nobody reads, unless a reader check has a panel).
    pub fn reader(&self) -> Option<&Llm> {
        self.reader.as_ref().map(|(_, l)| l)
    }

    /// The layer the calls of step `step` go to: its named model's, else the writer.
    pub fn llm_for(&self, step: &str) -> &Llm {
        self.steps.get(step).map_or(&self.writer, |(_, l)| l)
    }

    /// The named model of step `step`, when it has one.
    pub fn model_of(&self, step: &str) -> Option<&str> {
        self.steps.get(step).map(|(n, _)| n.as_str())
    }

    /// Who reads for the reader check `step`: its panel, else the build's reader, else
    /// nobody; each with its model's name when it is a named one.
    pub fn readers_of(&self, step: &str) -> Vec<(Option<&str>, &Llm)> {
        match self.panels.get(step) {
            Some(panel) => panel.iter().map(|(n, l)| (Some(n.as_str()), l)).collect(),
            None => self.reader.iter().map(|(who, l)| (who.name(), l)).collect(),
        }
    }

    /// Whether any route goes to a named model (a step's, a panel's or the reader).
    pub fn names_any(&self) -> bool {
        !self.steps.is_empty()
            || !self.panels.is_empty()
            || matches!(self.reader, Some((Role::Named(_), _)))
    }

    /// Who answers the calls of the step named `name` (several for a panel; none for a rule
    /// step or a reader check nobody reads): `reads` for a reader check, `calls_model` for a
    /// step with a prompt ([`crate::Step::reads`], [`crate::Step::prompts`]).
    pub fn of_step(&self, name: &str, reads: bool, calls_model: bool) -> Vec<Role> {
        if reads {
            if let Some(panel) = self.panels.get(name) {
                return panel.iter().map(|(n, _)| Role::Named(n.clone())).collect();
            }
            return self.reader.iter().map(|(who, _)| who.clone()).collect();
        }
        match self.steps.get(name) {
            Some((n, _)) => vec![Role::Named(n.clone())],
            None if calls_model => vec![Role::Writer],
            None => Vec::new(),
        }
    }

    /// Who answers an unnamed call of a step that reads (`reads`) or not.
    pub fn unnamed(&self, reads: bool) -> Role {
        match &self.reader {
            Some((Role::Reader, _)) if reads => Role::Reader,
            _ => Role::Writer,
        }
    }

    /// Every layer of the recipe, once each, with who it answers as: the writer first.
    pub fn layers(&self) -> Vec<(Role, &Llm)> {
        let mut out: Vec<(Role, &Llm)> = vec![(Role::Writer, &self.writer)];
        let steps = self
            .steps
            .values()
            .map(|(n, l)| (Role::Named(n.clone()), l));
        let panels = self
            .panels
            .values()
            .flatten()
            .map(|(n, l)| (Role::Named(n.clone()), l));
        let reader = self.reader.iter().map(|(w, l)| (w.clone(), l));
        for (who, l) in steps.chain(panels).chain(reader) {
            if !out.iter().any(|(_, seen)| seen.same_layer(l)) {
                out.push((who, l));
            }
        }
        out
    }

    /// The layers that answer as `who` (a name may have several: a step's and a panel's).
    pub fn layers_of(&self, who: &Role) -> Vec<&Llm> {
        self.layers()
            .into_iter()
            .filter(|(w, _)| w == who)
            .map(|(_, l)| l)
            .collect()
    }

    /// What each model's layers sent, found cached and spent in this run, by who they are.
    pub fn figures(&self) -> BTreeMap<Role, StatsSnapshot> {
        let mut out: BTreeMap<Role, StatsSnapshot> = BTreeMap::new();
        for (who, l) in self.layers() {
            *out.entry(who).or_default() += l.stats();
        }
        out
    }

    /// Stops every layer of the recipe: each call, upload, batch or batch file not yet sent
    /// or written fails at once with `why` (a recipe that ended stops its rounds' drivers,
    /// which run detached).
    pub fn stop_all(&self, why: &str) {
        for (_, l) in self.layers() {
            l.stop(why);
        }
    }

    /// What every layer of the recipe sent, found cached and spent in this run, together.
    pub fn total(&self) -> StatsSnapshot {
        self.layers().into_iter().map(|(_, l)| l.stats()).sum()
    }
}
