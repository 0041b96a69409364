"""SpecStory's markdown exports of other agents' sessions (`.specstory/history/*.md`), kept in
the project they were about: the repo adapter finds them there."""

from chinvex_adapters.kit.registry import Agent, Store

AGENT = Agent("specstory", "SpecStory", "chinvex_adapters.specstory.adapter:SpecStoryAdapter")
STORES: list[Store] = []
