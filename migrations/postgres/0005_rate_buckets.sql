CREATE TABLE "rate_buckets" (
	"tenant_id" text NOT NULL,
	"destination_id" text NOT NULL,
	"tokens" double precision NOT NULL,
	"refilled_at" timestamp (3) with time zone NOT NULL,
	CONSTRAINT "rate_buckets_tenant_id_destination_id_pk" PRIMARY KEY("tenant_id","destination_id")
);
