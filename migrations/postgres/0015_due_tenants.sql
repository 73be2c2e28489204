CREATE TABLE "due_tenants" (
	"tenant_id" text PRIMARY KEY NOT NULL,
	"due_at" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
CREATE INDEX "due_tenants_due_idx" ON "due_tenants" USING btree ("due_at","tenant_id");