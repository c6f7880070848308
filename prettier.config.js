// Prettier's settings for the tree's code (npm run format / format:check).
// printWidth 100: comments and docs are already wrapped at 100 (code had no wrap habit; a
// measure of libs/ and services/ showed comment lines stop sharply at 99-100 columns).
// The rest are today's habits, spelled out: double quotes, semicolons, trailing commas
// everywhere (each measured as the smallest diff against the tree).
/** @type {import("prettier").Config} */
export default {
  printWidth: 100,
  semi: true,
  singleQuote: false,
  trailingComma: "all",
  arrowParens: "always",
};
