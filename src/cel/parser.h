#pragma once
// A CEL parser (the grammar of cel-spec, with optional syntax `a.?b`, `a[?b]`, `[?x]`, `{?k: v}`) and cel-go's
// error display ("ERROR: <input>:1:22: <message>\n | <source line>\n | .....^"). Syntax error texts are ours:
// the apiserver refuses policies that do not parse, so they never reach the status controller.
#include <string>
#include <vector>

#include "cel/ast.h"

namespace kcm::cel {

struct Issue {
  int offset = 0;  // code points
  std::string message;
};

class Source {
 public:
  explicit Source(const std::string& utf8);
  const std::u32string& text() const { return text_; }
  // cel-go's Error.ToDisplayString: 1-based line, 1-based column, the line's snippet and a caret.
  std::string display(const Issue& issue) const;

 private:
  std::u32string text_;
  std::vector<int> lineStarts_;  // code point offset of each line's start
};

// cel-go's Errors.ToDisplayString: sorted by line then column (stable), joined by "\n".
std::string formatIssues(const Source& source, std::vector<Issue> issues);

struct ParseResult {
  ExprPtr expr;  // null when there were syntax errors
  std::vector<Issue> errors;
};

ParseResult parse(const Source& source);

}  // namespace kcm::cel
