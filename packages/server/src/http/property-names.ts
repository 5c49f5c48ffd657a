// Names read from the contract (its parameters) and then used as property keys on every request. V8 optimizes a
// keyed access `object[name]` for internalized strings only; a name cut out of a larger string (a split, a regular
// expression's capture, toLowerCase) is not one, and under load every such access threw the calling function's
// optimized code away ("unexpected name in keyed access": validateRequest about twice a second).
export function propertyName(name: string): string {
  // A string that becomes a property key is internalized; Object.keys hands back that copy.
  return Object.keys({ [name]: true })[0]!;
}
