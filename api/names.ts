/** Name rules shared by schemas and the operator format (kept free of the schema library). */
export const NAME_PATTERN = /^[a-z][a-z0-9]*(-[a-z0-9]+)*$/;
