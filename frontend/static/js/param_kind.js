// Which inputs and outputs are tensors. msprobe copies a scalar argument's value (a str, an
// int, a torch.Size, a ReduceOp…) into its Max/Min/Mean/Norm, so those columns only mean
// something for a tensor: the table shows a scalar's value once and the chart skips it.

/** The statistics msprobe computes for a tensor (and copies a scalar's value into). */
export const TENSOR_STATS = ['Max', 'Min', 'Mean', 'Norm'];
const TENSOR_TYPE = /(Tensor|Parameter)$/; // torch.Tensor, mindspore.Tensor, …Parameter

/** True when `fields` (one side's statistics of a parameter) describe a tensor. */
export function isTensor(fields) {
  if (!fields) return false;
  const type = fields.type;
  if (type) return TENSOR_TYPE.test(String(type));
  // No type recorded: a scalar (or a masked null leaf) still carries its value.
  return !Object.hasOwn(fields, 'value');
}

/** The fields to show for one side: a tensor's as they are; a scalar's without the copies of
 * its value, which it keeps in `value` (msprobe's own value, or the copy when it has none). */
export function shownFields(fields) {
  if (!fields || isTensor(fields)) return fields;
  const shown = { ...fields, value: fields.value ?? fields.Max };
  for (const stat of TENSOR_STATS) delete shown[stat];
  return shown;
}
