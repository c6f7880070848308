package tern.javaclient;

import java.util.Collection;
import java.util.Map;

/** One JSON object per line on stdout: what the TypeScript test reads (java-client.test.ts). */
final class Json {
  private Json() {}

  /** Prints {k1: v1, k2: v2, ...}; values are strings, numbers, booleans, null or collections of them. */
  static synchronized void emit(Object... keysAndValues) {
    StringBuilder b = new StringBuilder("{");
    for (int i = 0; i + 1 < keysAndValues.length; i += 2) {
      if (i > 0) b.append(',');
      value(b, String.valueOf(keysAndValues[i]));
      b.append(':');
      value(b, keysAndValues[i + 1]);
    }
    System.out.println(b.append('}'));
    System.out.flush();
  }

  private static void value(StringBuilder b, Object v) {
    if (v == null) {
      b.append("null");
    } else if (v instanceof Number || v instanceof Boolean) {
      b.append(v);
    } else if (v instanceof Collection<?> c) {
      b.append('[');
      boolean first = true;
      for (Object x : c) {
        if (!first) b.append(',');
        first = false;
        value(b, x);
      }
      b.append(']');
    } else if (v instanceof Map<?, ?> m) {
      b.append('{');
      boolean first = true;
      for (Map.Entry<?, ?> e : m.entrySet()) {
        if (!first) b.append(',');
        first = false;
        value(b, String.valueOf(e.getKey()));
        b.append(':');
        value(b, e.getValue());
      }
      b.append('}');
    } else {
      String s = v.toString();
      b.append('"');
      for (int i = 0; i < s.length(); i++) {
        char ch = s.charAt(i);
        switch (ch) {
          case '"' -> b.append("\\\"");
          case '\\' -> b.append("\\\\");
          case '\n' -> b.append("\\n");
          case '\r' -> b.append("\\r");
          case '\t' -> b.append("\\t");
          default -> {
            if (ch < 0x20) b.append(String.format("\\u%04x", (int) ch));
            else b.append(ch);
          }
        }
      }
      b.append('"');
    }
  }

  /** A failure as one line (the exception's class, message and cause chain), then exit 1. */
  static void fail(String event, Throwable e) {
    StringBuilder causes = new StringBuilder();
    for (Throwable c = e; c != null; c = c.getCause()) {
      if (causes.length() > 0) causes.append(" <- ");
      causes.append(c.getClass().getName()).append(": ").append(c.getMessage());
      if (c.getCause() == c) break;
    }
    emit("event", event, "error", e.getClass().getName(), "message", causes.toString());
    System.exit(1);
  }
}
