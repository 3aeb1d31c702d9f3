"""An edit request and the prompts that measure it, in one shape for the fact world's streams
(smoke and ci scale) and for CounterFact and zsRE (paper scale).

A request asks that `prompt` with `subject` in place of ``{}`` be completed by `target_new`
instead of `target_true`. Its *paraphrases* are other wordings of the same question (subject
filled in), its *neighbours* questions about other subjects whose answers the edit must leave
alone, each with that answer. `candidates` are the answers scored against each other at every
prompt (the metrics count a prompt as right when its wanted answer scores above every other
candidate): the relation's objects in the fact world; {target_new, target_true} in
CounterFact and zsRE (CounterFact's efficacy and paraphrase scores; ROME and MEMIT score zsRE by
the token accuracy of one answer instead, see counterfact.py).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class EditRequest:
    """One requested edit (module docstring)."""

    case: str
    subject: str
    prompt: str
    target_new: str
    target_true: str
    paraphrases: tuple[str, ...]
    neighbours: tuple[tuple[str, str], ...]
    candidates: tuple[str, ...]

    def __post_init__(self) -> None:
        if self.prompt.count("{}") != 1:
            raise ValueError(f"request {self.case}: prompt {self.prompt!r} needs one '{{}}'")
        if self.target_new == self.target_true:
            raise ValueError(f"request {self.case}: target_new equals target_true")
        missing = {self.target_new, self.target_true} - set(self.candidates)
        if missing:
            raise ValueError(f"request {self.case}: candidates lack {sorted(missing)}")

    def rewrite(self, opening: str = "") -> str:
        """The request's prompt with its subject, after `opening` (words, may be empty)."""
        text = self.prompt.format(self.subject)
        return f"{opening} {text}" if opening else text

    def subject_prefix(self, opening: str = "") -> str:
        """The text of `rewrite(opening)` up to and including the subject: its token count,
        less one, is the position of the subject's last token."""
        head = self.prompt.split("{}")[0] + self.subject
        return f"{opening} {head}" if opening else head
