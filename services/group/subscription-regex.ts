// Consumer-group regex subscriptions (KIP-848's subscribed_topic_regex), compiled with RE2JS:
// RE2's syntax, as Kafka's RE2/J, and matching in time linear in the topic name, so no pattern
// a client sends can make a broker backtrack (a JavaScript RegExp such as `(a+)+` against a
// long topic name blocked the event loop and every Raft group of the broker). A pattern must
// match the whole topic name (Kafka's rule).
import { RE2JS } from "re2js";
import { GROUP_LIMITS } from "./offsets-limits.js";

export interface TopicPattern {
  /** True when the pattern matches the whole topic name. */
  test(topic: string): boolean;
}

export type CompiledRegex =
  | { readonly ok: true; readonly pattern: TopicPattern }
  | { readonly ok: false; readonly message: string };

const CACHE_MAX = 1_000;
const cache = new Map<string, CompiledRegex>();

/** Compiles a subscription regex, or says why it is refused (INVALID_REGULAR_EXPRESSION). */
export function compileSubscriptionRegex(source: string): CompiledRegex {
  const cached = cache.get(source);
  if (cached) return cached;
  const compiled = compile(source);
  if (cache.size >= CACHE_MAX) cache.clear();
  cache.set(source, compiled);
  return compiled;
}

function compile(source: string): CompiledRegex {
  if (source.length > GROUP_LIMITS.regexCharsMax)
    return {
      ok: false,
      message: `the subscription regex has ${source.length} characters; at most ${GROUP_LIMITS.regexCharsMax} are accepted`,
    };
  try {
    const re = RE2JS.compile(source);
    return { ok: true, pattern: { test: (topic) => re.matches(topic) } };
  } catch (e) {
    return {
      ok: false,
      message: `${JSON.stringify(source)} is not a valid RE2 regular expression: ${(e as Error).message}`,
    };
  }
}

/** The names the pattern matches, in the given order. */
export function matchingTopics(source: string, topics: Iterable<string>): string[] {
  const compiled = compileSubscriptionRegex(source);
  if (!compiled.ok) return [];
  const out: string[] = [];
  for (const t of topics) if (compiled.pattern.test(t)) out.push(t);
  return out;
}
